import { findOrgCodeKind, findUnitLevel, replaceUserCampaigns, upsertOrgUnit, upsertUser } from '../../../data/loader/organization';
import { RecordError } from '../recordError';
import type { Applier, ApplyContext } from './applier';

export const applyOrgUnit: Applier<'orgUnit'> = async (r, ctx) => {
  const parent = r.parent === undefined ? undefined : await ctx.refs.unit(r.parent);
  const level = parent ? parent.level + 1 : 0;
  if (level > 4) throw new RecordError(`org unit ${JSON.stringify(r.orgCode)} would be at level ${level}; levels go from 0 to 4`);
  const existing = await findUnitLevel(ctx.trx, r.orgCode);
  if (existing !== undefined && existing !== level) {
    throw new RecordError(`org unit ${JSON.stringify(r.orgCode)} cannot move to another level (${existing} → ${level})`);
  }
  await claimOrgCode(ctx, r.orgCode, 'unit');
  await upsertOrgUnit(ctx.trx, { orgCode: r.orgCode, name: r.name, level, parentId: parent?.id ?? null, uniqueId: r.uniqueId });
  ctx.refs.forgetUnits();
};

export const applyUser: Applier<'user'> = async (r, ctx) => {
  const parent = r.parent === undefined ? null : (await ctx.refs.unit(r.parent)).id;
  await claimOrgCode(ctx, r.orgCode, 'user');
  const userId = await upsertUser(
    ctx.trx,
    {
      org_code: r.orgCode,
      username: r.username,
      name: r.name,
      parent_id: parent,
      email: r.email ?? null,
      inbound_phone_number: r.inboundPhoneNumber ?? null,
      roles: r.roles ?? [],
      employee_number: r.employeeNumber ?? null,
      payroll_number: r.payrollNumber ?? null,
    },
    r.uniqueId,
  );
  ctx.refs.forgetUser(r.orgCode);
  if (r.campaigns !== undefined) {
    const campaignIds: number[] = [];
    for (const code of r.campaigns) campaignIds.push((await ctx.refs.campaign(code)).id);
    await replaceUserCampaigns(ctx.trx, userId, campaignIds);
  }
};

/** Gives a clear line error when the code is taken by the other kind (users vs units). */
async function claimOrgCode(ctx: ApplyContext, orgCode: string, kind: 'user' | 'unit'): Promise<void> {
  const holder = await findOrgCodeKind(ctx.trx, orgCode);
  if (holder !== undefined && holder !== kind) {
    throw new RecordError(`org code ${JSON.stringify(orgCode)} is already used by ${holder === 'user' ? 'a user' : 'an org unit'}`);
  }
}
