import { findBySpelling, type OrgSnapshot } from './organization';

/**
 * Whose calls a calls-family list holds (docs/decisions.md, Calls family; Organisation):
 * one user's, or one org unit's and those of every unit below it, judged by the hierarchy
 * stored on each call (its unit at `level` in the call's chain).
 */
export type CallSubject = { kind: 'user'; userId: number } | { kind: 'unit'; unitId: number; level: number };

/**
 * The subject an org code names in the request's snapshot (org codes are unique across users
 * and units; `+` may stand for a space: orgCodeSpellings); `kind` accepts only that kind.
 * Undefined when nothing (of that kind) has the code. A user is found only in a snapshot loaded
 * with its users.
 */
export function callSubjectOf(org: OrgSnapshot, orgCode: string, kind?: CallSubject['kind']): CallSubject | undefined {
  return findBySpelling(orgCode, (spelling) => subjectSpelled(org, spelling, kind));
}

function subjectSpelled(org: OrgSnapshot, orgCode: string, kind?: CallSubject['kind']): CallSubject | undefined {
  if (kind !== 'user') {
    for (const unit of org.units.values()) {
      if (unit.orgCode === orgCode) return { kind: 'unit', unitId: unit.id, level: unit.level };
    }
  }
  if (kind !== 'unit') {
    for (const user of org.users.values()) {
      if (user.orgCode === orgCode) return { kind: 'user', userId: user.id };
    }
  }
  return undefined;
}
