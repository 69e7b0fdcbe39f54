/**
 * The generic `include` engine (docs/decisions.md, Include engine).
 *
 * A graph describes, per type, how to render an object without its complex properties, how to
 * identify it, and which complex properties it has (each resolved synchronously from data the
 * caller preloaded). `compileIncludes` turns a graph, a root type and the requested names into
 * a function that expands one root object; the calls export runs it once per row, so all the
 * name matching happens once per request.
 *
 * Rules:
 * 1. A complex property is absent unless its name is requested.
 * 2. Names are comma-separated and/or repeated, case-insensitive, trimmed, empty items ignored.
 * 3. An object already emitted in the same root output (which includes every object on the
 *    path from the root, so loops are covered) is not emitted again: a single property is then
 *    absent, an array leaves that element out. Expansion is breadth-first, so an object is kept
 *    where it is nearest the root (then in property order, then array order).
 * 4. A property is reached only through requested properties, so a nested name counts only
 *    when every property on its path is requested too.
 * 5. Unknown names are ignored.
 * 6. A name means the same property on every type, at every depth; expansion repeats as long
 *    as names allow, bounded by rule 3.
 * A requested single property whose value is missing is `null`; a requested list is `[]`.
 */

export type Resolved = object | readonly object[] | null | undefined;

// The functions of a type are method signatures: a graph holds types of different objects
// (IncludeType<LeadRow>, IncludeType<UserRecord>, ...) as IncludeType<object>, and the engine
// calls each with objects of its own type only. `this: void`: they are called unbound.
export interface IncludeProperty<T = object> {
  /** Type name (a key of the graph) of the value or of each element. */
  type: string;
  many: boolean;
  resolve(this: void, obj: T): Resolved;
}

export interface IncludeType<T = object> {
  /** Identifies an object within its type (e.g. its uniqueId). */
  identity(this: void, obj: T): string | number;
  /**
   * A fresh plain object without complex properties. To place an included property at a given
   * position, render it as `undefined` there: JSON leaves it out unless it is filled in.
   */
  render(this: void, obj: T): Record<string, unknown>;
  /** Complex properties by output name (camelCase); names are matched case-insensitively. */
  properties: Record<string, IncludeProperty<T>>;
}

export type IncludeGraph = Record<string, IncludeType>;

export type Expander<T = object> = (root: T) => Record<string, unknown>;

/** Requested names, lower case: from `include=a,b`, `include=a&include=b`, or both. */
export function parseIncludeNames(raw: unknown): Set<string> {
  const names = new Set<string>();
  const add = (value: unknown): void => {
    if (typeof value !== 'string') return;
    for (const part of value.split(',')) {
      const name = part.trim().toLowerCase();
      if (name !== '') names.add(name);
    }
  };
  if (Array.isArray(raw)) raw.forEach(add);
  else add(raw);
  return names;
}

interface ActiveProperty {
  name: string;
  typeIndex: number;
  many: boolean;
  resolve(this: void, obj: object): Resolved;
}

interface CompiledType {
  index: number;
  def: IncludeType;
  active: ActiveProperty[];
}

function lookupType(graph: IncludeGraph, name: string): IncludeType {
  const def = graph[name];
  if (def === undefined) throw new Error(`include graph has no type ${name}`);
  return def;
}

/** Expand one root object; `names` are lower case (see parseIncludeNames). */
export function expand(graph: IncludeGraph, rootType: string, root: object, names: ReadonlySet<string>): Record<string, unknown> {
  return compileIncludes(graph, rootType, names)(root);
}

/**
 * A fast expander for one request: the active properties of every reachable type are picked
 * once. When no object can be met twice (every reachable type is reached by one path and no
 * list is involved), the expander skips identity tracking altogether.
 */
export function compileIncludes<T extends object = object>(graph: IncludeGraph, rootType: string, names: ReadonlySet<string>): Expander<T> {
  const lowered = new Set<string>();
  for (const n of names) lowered.add(n.toLowerCase());

  const types: CompiledType[] = [];
  const byName = new Map<string, CompiledType>();
  const compile = (name: string): CompiledType => {
    let ct = byName.get(name);
    if (ct !== undefined) return ct;
    ct = { index: types.length, def: lookupType(graph, name), active: [] };
    byName.set(name, ct);
    types.push(ct);
    for (const [prop, p] of Object.entries(ct.def.properties)) {
      if (!lowered.has(prop.toLowerCase())) continue;
      ct.active.push({ name: prop, typeIndex: compile(p.type).index, many: p.many, resolve: p.resolve });
    }
    return ct;
  };
  const root = compile(rootType);

  if (root.active.length === 0) return root.def.render;

  // Each type reached at most once from the root, and no lists: objects cannot repeat.
  let tree = true;
  const reached = new Set<number>([root.index]);
  const walk = (ct: CompiledType): void => {
    for (const p of ct.active) {
      if (p.many || reached.has(p.typeIndex)) {
        tree = false;
        return;
      }
      reached.add(p.typeIndex);
      walk(types[p.typeIndex]!);
      if (!tree) return;
    }
  };
  walk(root);

  return tree ? treeExpander(types, root) : graphExpander(types, root);
}

function treeExpander(types: CompiledType[], ct: CompiledType): Expander {
  const render = ct.def.render;
  if (ct.active.length === 0) return render;
  const props = ct.active.map((p) => ({ name: p.name, resolve: p.resolve, expand: treeExpander(types, types[p.typeIndex]!) }));
  return (obj) => {
    const out = render(obj);
    for (const p of props) {
      const v = p.resolve(obj) as object | null | undefined;
      out[p.name] = v == null ? null : p.expand(v);
    }
    return out;
  };
}

function graphExpander(types: CompiledType[], root: CompiledType): Expander {
  return (rootObj) => {
    const seen = new Set<string>();
    seen.add(root.index + ':' + root.def.identity(rootObj));
    const rootOut = root.def.render(rootObj);
    // Breadth-first queue of (type, object, output) triples.
    const qType: CompiledType[] = [root];
    const qObj: object[] = [rootObj];
    const qOut: Record<string, unknown>[] = [rootOut];
    const emit = (typeIndex: number, obj: object): Record<string, unknown> | undefined => {
      const ct = types[typeIndex]!;
      const key = typeIndex + ':' + ct.def.identity(obj);
      if (seen.has(key)) return undefined;
      seen.add(key);
      const out = ct.def.render(obj);
      if (ct.active.length > 0) {
        qType.push(ct);
        qObj.push(obj);
        qOut.push(out);
      }
      return out;
    };
    for (let i = 0; i < qType.length; i++) {
      const ct = qType[i]!;
      const obj = qObj[i]!;
      const out = qOut[i]!;
      for (const p of ct.active) {
        const v = p.resolve(obj);
        if (p.many) {
          const list: Record<string, unknown>[] = [];
          if (v != null) {
            for (const item of v as readonly object[]) {
              const child = emit(p.typeIndex, item);
              if (child !== undefined) list.push(child);
            }
          }
          out[p.name] = list;
        } else if (v == null) {
          out[p.name] = null;
        } else {
          const child = emit(p.typeIndex, v);
          if (child !== undefined) out[p.name] = child;
        }
      }
    }
    return rootOut;
  };
}
