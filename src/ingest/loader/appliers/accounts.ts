import { LeadClosure, LeadStatus } from '../../../domain/enums';
import { findAccountId, upsertRequestLimit, upsertSavedSearch } from '../../../data/loader/accounts';
import { AccountCommandError, upsertAccount } from '../../accountCommands';
import { RecordError } from '../recordError';
import type { Applier } from './applier';

export const applySavedSearch: Applier<'savedSearch'> = async (r, ctx) => {
  const user = await ctx.refs.user(r.user);
  for (const code of r.campaigns ?? []) await ctx.refs.campaign(code);
  await upsertSavedSearch(ctx.trx, user.id, r.name, {
    campaigns: r.campaigns ?? [],
    projects: r.projects ?? [],
    statuses: (r.statuses ?? []).map((s) => LeadStatus.toNumber(s)),
    lead_closures: (r.leadClosures ?? []).map((c) => LeadClosure.toNumber(c)),
    all_open_statuses: r.allOpenStatuses ?? false,
    all_closed_statuses: r.allClosedStatuses ?? false,
  });
};

export const applyAccount: Applier<'account'> = async (r, ctx) => {
  try {
    // The same upsert as `lcm account`: hashed password, version bumped for cached credentials.
    await upsertAccount(ctx.trx, {
      username: r.username,
      password: r.password,
      userOrgCode: r.user,
      projects: r.projects,
      rights: r.rights,
      entryAccess: r.entryAccess,
      dateTimeFormat: r.dateTimeFormat,
      enabled: r.enabled,
    });
  } catch (err) {
    if (err instanceof AccountCommandError) throw new RecordError(err.message);
    throw err;
  }
};

export const applyRequestLimit: Applier<'requestLimit'> = async (r, ctx) => {
  const accountId = await findAccountId(ctx.trx, r.account);
  if (accountId === undefined) throw new RecordError(`unknown account ${JSON.stringify(r.account)}`);
  await upsertRequestLimit(ctx.trx, accountId, r.service, r.dailyLimit);
};
