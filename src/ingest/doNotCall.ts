import type { Knex } from 'knex';
import { defaultPhoneRegion } from '../config/platform';
import { toE164 } from '../domain/phoneNumber';
import { addDoNotCallNumbers, DoNotCallList, ListedNumbers, NewDoNotCallEntry, removeDoNotCallNumber } from '../data/doNotCallRepository';
import { findProject } from '../data/projectRepository';
import { projectScope } from '../data/projectScope';

/**
 * Listing and unlisting numbers (docs/decisions.md, Do-not-call), for the API (the customer's
 * list, within the account's projects) and `lcm dnc` (either list, every project). Numbers are
 * read into E.164 in the default region; a listing and the status moves of its leads are one
 * transaction.
 */

export interface DoNotCallInput {
  phoneNumber: string;
  /** A project's name or unique id; absent for every project. */
  project?: string;
  note?: string;
  expiresTime?: Date;
}

export interface DoNotCallInputError {
  /** Position in the request (0 for a single entry). */
  index: number;
  field: 'phoneNumber' | 'project' | 'expiresTime';
  message: string;
}

/** A listing refused as a whole: nothing is stored. */
export class DoNotCallRefused extends Error {
  constructor(
    readonly reason: 'invalid' | 'project_forbidden',
    readonly errors: DoNotCallInputError[],
  ) {
    super(errors.map((e) => `[${e.index}].${e.field}: ${e.message}`).join('; '));
    this.name = 'DoNotCallRefused';
  }
}

export interface DoNotCallDeps {
  db: Knex;
  clock: () => Date;
}

/** `+45 12 34 56 78` → `+4512345678`; undefined when it is not a phone number. */
function normalizePhoneNumber(input: string): string | undefined {
  return toE164(input, defaultPhoneRegion());
}

/**
 * Adds entries to a list and moves the open leads with their numbers, in one transaction.
 * Throws DoNotCallRefused (nothing stored) when a number cannot be read, a project is unknown,
 * an expiry time has passed, or a project lies outside the account's projects.
 */
export async function listNumbers(
  deps: DoNotCallDeps,
  list: DoNotCallList,
  inputs: readonly DoNotCallInput[],
  userId?: number,
): Promise<ListedNumbers> {
  const now = deps.clock();
  return deps.db.transaction(async (trx) => {
    const entries = await resolveEntries(trx, list, inputs, now);
    const listed = await addDoNotCallNumbers(trx, list, entries, { now, ...(userId === undefined ? {} : { userId }) });
    return listed;
  });
}

async function resolveEntries(
  trx: Knex.Transaction,
  list: DoNotCallList,
  inputs: readonly DoNotCallInput[],
  now: Date,
): Promise<NewDoNotCallEntry[]> {
  const errors: DoNotCallInputError[] = [];
  const forbidden: DoNotCallInputError[] = [];
  const entries: NewDoNotCallEntry[] = [];
  // The customer list's scope decides project visibility; the global list has no projects.
  const scope = list.global ? projectScope(['*']) : list.scope;
  for (const [index, input] of inputs.entries()) {
    const phoneNumber = normalizePhoneNumber(input.phoneNumber);
    if (phoneNumber === undefined) errors.push({ index, field: 'phoneNumber', message: 'is not a phone number' });
    if (input.expiresTime !== undefined && input.expiresTime.getTime() <= now.getTime()) {
      errors.push({ index, field: 'expiresTime', message: 'must lie in the future' });
    }
    let project: string | undefined;
    if (input.project !== undefined) {
      if (list.global) {
        errors.push({ index, field: 'project', message: 'the global list has no projects' });
      } else {
        const found = await findProject(trx, input.project, scope);
        if (found === undefined) errors.push({ index, field: 'project', message: 'is not the name or unique id of a project' });
        else if (!found.visible) forbidden.push({ index, field: 'project', message: "is outside the account's projects" });
        else project = found.name;
      }
    }
    if (phoneNumber !== undefined) {
      entries.push({
        phoneNumber,
        ...(project === undefined ? {} : { project }),
        ...(input.note === undefined ? {} : { note: input.note }),
        ...(input.expiresTime === undefined ? {} : { expiresTime: input.expiresTime }),
      });
    }
  }
  if (errors.length > 0) throw new DoNotCallRefused('invalid', errors);
  if (forbidden.length > 0) throw new DoNotCallRefused('project_forbidden', forbidden);
  return entries;
}

/**
 * Removes a number from a list (the entries the account can see, or one project's); answers how
 * many entries went. Throws DoNotCallRefused for a number that cannot be read or a project that
 * is unknown or outside the account's projects.
 */
export async function unlistNumber(
  deps: DoNotCallDeps,
  list: DoNotCallList,
  phoneNumberInput: string,
  projectInput?: string,
): Promise<number> {
  const phoneNumber = normalizePhoneNumber(phoneNumberInput);
  if (phoneNumber === undefined)
    throw new DoNotCallRefused('invalid', [{ index: 0, field: 'phoneNumber', message: 'is not a phone number' }]);
  let project: string | undefined;
  if (projectInput !== undefined && !list.global) {
    const found = await findProject(deps.db, projectInput, list.scope);
    if (found === undefined)
      throw new DoNotCallRefused('invalid', [{ index: 0, field: 'project', message: 'is not the name or unique id of a project' }]);
    if (!found.visible)
      throw new DoNotCallRefused('project_forbidden', [{ index: 0, field: 'project', message: "is outside the account's projects" }]);
    project = found.name;
  }
  return removeDoNotCallNumber(deps.db, list, phoneNumber, project);
}
