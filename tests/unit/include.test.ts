import { compileIncludes, expand, IncludeGraph, parseIncludeNames } from '../../src/domain/include';

interface Unit {
  uniqueId: string;
  orgCode: string;
  level: number;
  parentId: string | null;
}
interface User {
  uniqueId: string;
  orgCode: string;
  parentId: string | null;
  campaignIds: string[];
}
interface Campaign {
  uniqueId: string;
  code: string;
}
interface Call {
  uniqueId: string;
  campaignId: string;
  userId: string | null;
}

// R ─ A ─ A1
//   └ B
const units = new Map<string, Unit>([
  ['R', { uniqueId: 'R', orgCode: 'root', level: 0, parentId: null }],
  ['A', { uniqueId: 'A', orgCode: 'a', level: 1, parentId: 'R' }],
  ['B', { uniqueId: 'B', orgCode: 'b', level: 1, parentId: 'R' }],
  ['A1', { uniqueId: 'A1', orgCode: 'a1', level: 2, parentId: 'A' }],
]);
const users = new Map<string, User>([
  ['u1', { uniqueId: 'u1', orgCode: 'u1', parentId: 'A', campaignIds: ['c1', 'c2'] }],
  ['u2', { uniqueId: 'u2', orgCode: 'u2', parentId: 'A', campaignIds: ['c2'] }],
  ['u3', { uniqueId: 'u3', orgCode: 'u3', parentId: 'A1', campaignIds: ['c1'] }],
]);
const campaigns = new Map<string, Campaign>([
  ['c1', { uniqueId: 'c1', code: 'C1' }],
  ['c2', { uniqueId: 'c2', code: 'C2' }],
]);
const call: Call = { uniqueId: 'k1', campaignId: 'c1', userId: 'u1' };

const childrenOf = (id: string) => [...units.values()].filter((u) => u.parentId === id);
const usersOf = (id: string) => [...users.values()].filter((u) => u.parentId === id);

const graph: IncludeGraph = {
  OrgUnit: {
    identity: (u: Unit) => u.uniqueId,
    render: (u: Unit) => ({ uniqueId: u.uniqueId, orgCode: u.orgCode, level: u.level }),
    properties: {
      parent: { type: 'OrgUnit', many: false, resolve: (u: Unit) => (u.parentId ? units.get(u.parentId) : null) },
      children: { type: 'OrgUnit', many: true, resolve: (u: Unit) => childrenOf(u.uniqueId) },
      users: { type: 'User', many: true, resolve: (u: Unit) => usersOf(u.uniqueId) },
    },
  },
  User: {
    identity: (u: User) => u.uniqueId,
    render: (u: User) => ({ uniqueId: u.uniqueId, orgCode: u.orgCode }),
    properties: {
      parent: { type: 'OrgUnit', many: false, resolve: (u: User) => (u.parentId ? units.get(u.parentId) : undefined) },
      campaigns: { type: 'Campaign', many: true, resolve: (u: User) => u.campaignIds.map((id) => campaigns.get(id)!) },
    },
  },
  Campaign: {
    identity: (c: Campaign) => c.uniqueId,
    render: (c: Campaign) => ({ uniqueId: c.uniqueId, code: c.code }),
    properties: {},
  },
  Call: {
    identity: (c: Call) => c.uniqueId,
    // Placeholders keep campaign and user first when they are included.
    render: (c: Call) => ({ campaign: undefined, user: undefined, uniqueId: c.uniqueId }),
    properties: {
      campaign: { type: 'Campaign', many: false, resolve: (c: Call) => campaigns.get(c.campaignId) },
      user: { type: 'User', many: false, resolve: (c: Call) => (c.userId ? users.get(c.userId) : undefined) },
    },
  },
};

/** Expanded objects as JSON reads them back: a complex property is there only when included. */
interface CampaignOut {
  uniqueId: string;
  code: string;
}
interface UnitOut {
  uniqueId: string;
  orgCode: string;
  level: number;
  parent?: UnitOut | null;
  children?: UnitOut[];
  users?: UserOut[];
}
interface UserOut {
  uniqueId: string;
  orgCode: string;
  parent?: UnitOut | null;
  campaigns?: CampaignOut[];
}
interface CallOut {
  uniqueId: string;
  campaign?: CampaignOut | null;
  user?: UserOut | null;
}

const json = (v: unknown): unknown => JSON.parse(JSON.stringify(v));
const unit = (id: string, include: string) => json(expand(graph, 'OrgUnit', units.get(id)!, parseIncludeNames(include))) as UnitOut;
const user = (id: string, include: string) => json(expand(graph, 'User', users.get(id)!, parseIncludeNames(include))) as UserOut;
const callOut = (c: Call, include: string) => json(expand(graph, 'Call', c, parseIncludeNames(include))) as CallOut;

describe('parseIncludeNames', () => {
  it('when names are comma-separated, repeated or both, then all are read in lower case, trimmed, empties dropped', () => {
    expect([...parseIncludeNames('a,b')]).toEqual(['a', 'b']);
    expect([...parseIncludeNames(['a', 'b'])]).toEqual(['a', 'b']);
    expect([...parseIncludeNames(['Campaign,  USER ', ',,', 'user'])]).toEqual(['campaign', 'user']);
    expect([...parseIncludeNames(' , ')]).toEqual([]);
  });

  it('when the parameter is absent or not text, then no names are read', () => {
    expect(parseIncludeNames(undefined).size).toBe(0);
    expect(parseIncludeNames(null).size).toBe(0);
    expect(parseIncludeNames({ a: 'b' }).size).toBe(0);
    expect([...parseIncludeNames(['a', 3, { x: 1 }])]).toEqual(['a']);
  });
});

describe('include rules (docs/decisions.md, Include engine)', () => {
  it('rule 1: when nothing is named, then complex properties are left out', () => {
    expect(callOut(call, '')).toEqual({ uniqueId: 'k1' });
    expect(unit('A', '')).toEqual({ uniqueId: 'A', orgCode: 'a', level: 1 });
    expect(user('u1', '')).toEqual({ uniqueId: 'u1', orgCode: 'u1' });
  });

  it('rule 2: when names are repeated, comma-separated or in another case, then they all count', () => {
    const expected = callOut(call, 'campaign,user');
    expect(expected).toEqual({ campaign: { uniqueId: 'c1', code: 'C1' }, user: { uniqueId: 'u1', orgCode: 'u1' }, uniqueId: 'k1' });
    expect(json(expand(graph, 'Call', call, parseIncludeNames(['CAMPAIGN', ' User '])))).toEqual(expected);
    expect(json(expand(graph, 'Call', call, parseIncludeNames(['campaign', 'user,campaign'])))).toEqual(expected);
  });

  it('rule 3: when a property leads back to an object on the path, then it is left out (no loop)', () => {
    // A1.parent = A (the root of this output): left out.
    expect(unit('A1', 'parent,children')).toEqual({
      uniqueId: 'A1',
      orgCode: 'a1',
      level: 2,
      children: [],
      parent: {
        uniqueId: 'A',
        orgCode: 'a',
        level: 1,
        // A.children = [A1], the root: left out.
        children: [],
        parent: {
          uniqueId: 'R',
          orgCode: 'root',
          level: 0,
          parent: null,
          children: [{ uniqueId: 'B', orgCode: 'b', level: 1, children: [] }],
        },
      },
    });
  });

  it('rule 3: when the same object would appear twice in one root object, then only the first is kept', () => {
    // u1 holds c1 and c2; u2 reached through u1.parent also holds c2, which is not repeated.
    expect(user('u1', 'campaigns,parent,users')).toEqual({
      uniqueId: 'u1',
      orgCode: 'u1',
      campaigns: [
        { uniqueId: 'c1', code: 'C1' },
        { uniqueId: 'c2', code: 'C2' },
      ],
      parent: {
        uniqueId: 'A',
        orgCode: 'a',
        level: 1,
        parent: { uniqueId: 'R', orgCode: 'root', level: 0, parent: null, users: [] },
        users: [{ uniqueId: 'u2', orgCode: 'u2', campaigns: [] }],
      },
    });
  });

  it('rule 3: when the same object repeats in different root objects, then each root has it', () => {
    const other: Call = { uniqueId: 'k2', campaignId: 'c1', userId: 'u2' };
    const run = compileIncludes(graph, 'Call', parseIncludeNames('campaign'));
    expect((json(run(call)) as CallOut).campaign).toEqual({ uniqueId: 'c1', code: 'C1' });
    expect((json(run(other)) as CallOut).campaign).toEqual({ uniqueId: 'c1', code: 'C1' });
  });

  it('rule 4: when a nested name is named without the property above it, then it has no effect', () => {
    expect(unit('A', 'campaigns')).toEqual({ uniqueId: 'A', orgCode: 'a', level: 1 });
  });

  it('rule 4: when the whole path is named, then the nested property is included', () => {
    expect(unit('A', 'users,campaigns')).toEqual({
      uniqueId: 'A',
      orgCode: 'a',
      level: 1,
      users: [
        {
          uniqueId: 'u1',
          orgCode: 'u1',
          campaigns: [
            { uniqueId: 'c1', code: 'C1' },
            { uniqueId: 'c2', code: 'C2' },
          ],
        },
        // c2 already appears under u1 in this root object.
        { uniqueId: 'u2', orgCode: 'u2', campaigns: [] },
      ],
    });
  });

  it('rule 5: when names are unknown, then they are ignored', () => {
    expect(callOut(call, 'nonsense,organizationalUnits,')).toEqual({ uniqueId: 'k1' });
    expect(callOut(call, 'nonsense,user')).toEqual({ user: { uniqueId: 'u1', orgCode: 'u1' }, uniqueId: 'k1' });
  });

  it('rule 6: when a name exists on several types, then it applies to all of them at every depth', () => {
    // parent on the user and on each org unit: the chain runs to the root.
    expect(user('u3', 'parent')).toEqual({
      uniqueId: 'u3',
      orgCode: 'u3',
      parent: {
        uniqueId: 'A1',
        orgCode: 'a1',
        level: 2,
        parent: { uniqueId: 'A', orgCode: 'a', level: 1, parent: { uniqueId: 'R', orgCode: 'root', level: 0, parent: null } },
      },
    });
    expect(callOut(call, 'user,parent')).toEqual({
      user: {
        uniqueId: 'u1',
        orgCode: 'u1',
        parent: { uniqueId: 'A', orgCode: 'a', level: 1, parent: { uniqueId: 'R', orgCode: 'root', level: 0, parent: null } },
      },
      uniqueId: 'k1',
    });
  });
});

describe('include scenarios', () => {
  it('when an org unit includes children and parent, then no child points back to its parent', () => {
    expect(unit('R', 'children,parent')).toEqual({
      uniqueId: 'R',
      orgCode: 'root',
      level: 0,
      parent: null,
      children: [
        { uniqueId: 'A', orgCode: 'a', level: 1, children: [{ uniqueId: 'A1', orgCode: 'a1', level: 2, children: [] }] },
        { uniqueId: 'B', orgCode: 'b', level: 1, children: [] },
      ],
    });
  });

  it('when an org unit includes users and children, then users of the whole subtree appear once each', () => {
    const out = unit('R', 'users,children');
    expect(out.users).toEqual([]);
    expect(out.children![0]!.users!.map((u: { uniqueId: string }) => u.uniqueId)).toEqual(['u1', 'u2']);
    expect(out.children![0]!.children![0]!.users!.map((u: { uniqueId: string }) => u.uniqueId)).toEqual(['u3']);
  });

  it('when an object is reachable at two depths, then it is kept nearest the root', () => {
    // u1.campaigns holds c1 at depth 1; u1.parent.users[u3 via children] would hold it deeper.
    const out = user('u1', 'campaigns,parent,children,users');
    expect(out.campaigns!.map((c: { uniqueId: string }) => c.uniqueId)).toEqual(['c1', 'c2']);
    expect(out.parent!.children![0]!.users![0]).toEqual({ uniqueId: 'u3', orgCode: 'u3', campaigns: [] });
  });

  it('when a named single property has no value, then it is null, and a named list with none is empty', () => {
    const orphan: Call = { uniqueId: 'k3', campaignId: 'missing', userId: null };
    expect(callOut(orphan, 'campaign,user')).toEqual({ campaign: null, user: null, uniqueId: 'k3' });
    expect(unit('B', 'users')).toEqual({ uniqueId: 'B', orgCode: 'b', level: 1, users: [] });
  });

  it('when a placeholder is rendered, then an included property keeps its position and an absent one is dropped', () => {
    expect(Object.keys(expand(graph, 'Call', call, parseIncludeNames('user,campaign')))).toEqual(['campaign', 'user', 'uniqueId']);
    expect(JSON.stringify(expand(graph, 'Call', call, parseIncludeNames('user')))).toBe(
      '{"user":{"uniqueId":"u1","orgCode":"u1"},"uniqueId":"k1"}',
    );
  });

  it('when nothing applies, then resolvers are not called', () => {
    const resolve = jest.fn(() => campaigns.get('c1'));
    const g: IncludeGraph = { ...graph, Call: { ...graph.Call!, properties: { campaign: { type: 'Campaign', many: false, resolve } } } };
    const run = compileIncludes(g, 'Call', parseIncludeNames('user,parent'));
    for (let i = 0; i < 3; i++) run(call);
    expect(resolve).not.toHaveBeenCalled();
  });

  it('when the campaign of a call is also one of its user campaigns, then it is not repeated there', () => {
    const out = callOut(call, 'campaign,user,campaigns');
    expect(out.campaign).toEqual({ uniqueId: 'c1', code: 'C1' });
    expect(out.user!.campaigns).toEqual([{ uniqueId: 'c2', code: 'C2' }]);
  });

  it('when many rows run through one compiled expander, then each output is independent', () => {
    const run = compileIncludes(graph, 'Call', parseIncludeNames('campaign,user'));
    const a = run(call);
    const b = run(call);
    expect(a).not.toBe(b);
    expect(a.campaign).not.toBe(b.campaign);
    expect(json(a)).toEqual(json(b));
  });

  it('when the root type is not in the graph, then compiling throws', () => {
    expect(() => compileIncludes(graph, 'Nope', new Set())).toThrow(/no type Nope/);
    const bad: IncludeGraph = {
      X: { identity: () => 1, render: () => ({}), properties: { y: { type: 'Y', many: false, resolve: () => ({}) } } },
    };
    expect(() => compileIncludes(bad, 'X', new Set(['y']))).toThrow(/no type Y/);
  });
});
