import type { AccountContext } from '../../src/domain/account';
import { callIncludesNeedUsers } from '../../src/domain/callSerializer';
import { leadIncludesNeedSnapshot, leadIncludesNeedUsers } from '../../src/domain/leadSerializer';
import { ORGANIZATION_TREE_INCLUDES, permittedIncludeNames } from '../../src/domain/organizationGraph';

/** The Include names an account may follow (docs/decisions.md, Include engine). */

type Rights = Pick<AccountContext, 'rights'>;
const reads: Rights = { rights: { Calls: ['Get'], Leads: ['Get'], SimpleLeads: ['Get'] } };
const organization: Rights = { rights: { ...reads.rights, Organization: ['Get'] } };
const names = (raw: unknown, account: Rights) => [...permittedIncludeNames(raw, account)];

describe('permittedIncludeNames', () => {
  it('when the account lacks Organization: Get, then parent, children and users are left out and every other name is kept', () => {
    expect(names('campaign,user,parent,children,users', reads)).toEqual(['campaign', 'user']);
    expect(names(['ownerOrgUnit', 'uploadedByUser,parent', 'campaigns', 'nonsense'], reads)).toEqual([
      'ownerorgunit',
      'uploadedbyuser',
      'campaigns',
      'nonsense',
    ]);
  });

  it('when the tree names come in another case or with spaces, then they are left out all the same', () => {
    expect(names(' PARENT , Children,USERS ,User', reads)).toEqual(['user']);
  });

  it('when the account has Organization: Get, then every name is kept, as parsed', () => {
    expect(names('Campaign, user,parent,children,users,nonsense', organization)).toEqual([
      'campaign',
      'user',
      'parent',
      'children',
      'users',
      'nonsense',
    ]);
  });

  it('when the account has another verb on Organization only, then the tree names are left out', () => {
    expect(names('user,parent', { rights: { Organization: ['Post', 'Put'] } })).toEqual(['user']);
  });

  it('when Include is absent, then no names come', () => {
    expect(names(undefined, reads)).toEqual([]);
    expect(names(undefined, organization)).toEqual([]);
  });
});

describe('ORGANIZATION_TREE_INCLUDES', () => {
  it('when read off the include graph, then they are the properties of the organisation types that lead to units or users', () => {
    expect([...ORGANIZATION_TREE_INCLUDES].sort()).toEqual(['children', 'parent', 'users']);
  });
});

describe('the snapshot a narrowed request loads', () => {
  it('when users is left out, then a call list needs the snapshot users only for its own user', () => {
    expect(callIncludesNeedUsers(permittedIncludeNames('campaign,users,parent', reads))).toBe(false);
    expect(callIncludesNeedUsers(permittedIncludeNames('campaign,users,parent', organization))).toBe(true);
    expect(callIncludesNeedUsers(permittedIncludeNames('user,users', reads))).toBe(true);
  });

  it('when users is left out, then a lead needs the snapshot users only for its user references', () => {
    expect(leadIncludesNeedUsers(permittedIncludeNames('ownerOrgUnit,users,children', reads))).toBe(false);
    expect(leadIncludesNeedUsers(permittedIncludeNames('ownerOrgUnit,users,children', organization))).toBe(true);
    expect(leadIncludesNeedUsers(permittedIncludeNames('uploadedByUser,users', reads))).toBe(true);
  });

  it('when only tree names are asked for, then a lead needs no snapshot at all', () => {
    expect(leadIncludesNeedSnapshot(permittedIncludeNames('parent,children,users', reads))).toBe(false);
  });
});
