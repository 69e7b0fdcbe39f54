import { randomUUID } from 'node:crypto';
import { CampaignType, EntryAccess, LeadClosure, LeadStatus } from '../../../domain/enums';
import { timeSpanToPgInterval, type TimeSpan } from '../../../domain/timespan';
import { localDate } from '../../../domain/datetime';
import { mapLeadData } from '../../../domain/leadData';
import { toE164 } from '../../../domain/phoneNumber';
import { defaultPhoneRegion } from '../../../config/platform';
import { autoPoolName, ensurePool } from '../../../data/leadPools';
import { recordLeadEvent } from '../../../data/hookEvents';
import { findLeadDefinitionId, findLeadStatus, upsertCampaign, upsertLead, upsertLeadDefinition } from '../../../data/loader/campaigns';
import { RecordError } from '../recordError';
import type { Applier } from './applier';

export const applyLeadDefinition: Applier<'leadDefinition'> = async (r, ctx) => {
  const names = new Set<string>();
  for (const f of r.fields) {
    const key = f.name.toLowerCase();
    if (names.has(key)) throw new RecordError(`field ${JSON.stringify(f.name)} appears twice`);
    names.add(key);
  }
  if (r.fields.filter((f) => f.externalKey).length > 1) throw new RecordError('only one field can be the external key');
  // The definition's fields are replaced as a whole: the record is the full description.
  const id = await upsertLeadDefinition(ctx.trx, {
    name: r.name,
    uniqueId: r.uniqueId,
    fields: r.fields.map((f, i) => ({
      name: f.name,
      import_name: f.importName ?? null,
      type: f.type,
      required: f.required ?? false,
      sort_order: f.sortOrder ?? i,
      editable: f.editable ?? true,
      access: EntryAccess.toNumber(f.access ?? 'None'),
      external_key: f.externalKey ?? false,
    })),
  });
  ctx.refs.forgetFields(id);
};

export const applyCampaign: Applier<'campaign'> = async (r, ctx) => {
  const definitionId = await findLeadDefinitionId(ctx.trx, r.leadDefinition);
  if (definitionId === undefined) throw new RecordError(`unknown lead definition ${JSON.stringify(r.leadDefinition)}`);
  const interval = (ts: TimeSpan | undefined) => (ts === undefined ? null : timeSpanToPgInterval(ts));
  await upsertCampaign(
    ctx.trx,
    {
      code: r.code,
      name: r.name,
      project: r.project,
      lead_definition_id: definitionId,
      campaign_type: CampaignType.toNumber(r.campaignType),
      max_attempts: r.maxAttempts ?? null,
      abandon_after: interval(r.abandonAfter),
      expire_after: interval(r.expireAfter),
      private_expire_after: interval(r.privateExpireAfter),
      active: r.active ?? true,
      duplicate_check: r.duplicateCheck ?? null,
      duplicate_key: r.duplicateKey ?? null,
      duplicate_window: interval(r.duplicateWindow),
      on_duplicate: r.onDuplicate ?? null,
    },
    r.uniqueId,
  );
  ctx.refs.forgetCampaign(r.code);
};

export const applyLead: Applier<'lead'> = async (r, ctx) => {
  const { trx, refs, zone } = ctx;
  const campaign = await refs.campaign(r.campaign);
  const mapped = mapLeadData(await refs.fieldRules(campaign.leadDefinitionId), r.data, zone);
  if (mapped.errors.length > 0) {
    throw new RecordError(mapped.errors.map((e) => `data.${e.field} ${e.message}`).join('; '));
  }
  const uploadTime = r.uploadTime ?? ctx.now();
  const poolId = await ensurePool(trx, campaign.id, r.pool ?? autoPoolName(localDate(uploadTime, zone)));
  const lastModified = r.lastModifiedTime ?? uploadTime;
  const status = LeadStatus.toNumber(r.status ?? 'New');
  const lead = {
    campaign_id: campaign.id,
    pool_id: poolId,
    status,
    closure: LeadClosure.toNumber(r.closure ?? 'NotSet'),
    priority: r.priority ?? 0,
    phone_number: mapped.phoneNumber,
    phone_e164: mapped.phoneNumber === null ? null : (toE164(mapped.phoneNumber, defaultPhoneRegion()) ?? null),
    external_key: mapped.externalKey,
    data: JSON.stringify(mapped.data),
    upload_time: uploadTime,
    last_modified_time: lastModified,
    first_processed_time: r.firstProcessedTime ?? null,
    status_changed_time: lastModified,
    owner_org_unit_id: r.ownerOrgUnit === undefined ? null : (await refs.unit(r.ownerOrgUnit)).id,
    uploaded_by_user_id: await refs.optionalUserId(r.uploadedByUser),
    last_modified_by_user_id: await refs.optionalUserId(r.lastModifiedByUser),
    first_processed_by_user_id: await refs.optionalUserId(r.firstProcessedByUser),
  };
  const before = r.uniqueId === undefined ? undefined : await findLeadStatus(trx, r.uniqueId);
  const leadId = await upsertLead(trx, lead, r.uniqueId ?? randomUUID());
  // A new lead is lead.created; a reloaded one whose status moved is lead.statusChanged.
  if (before === undefined) await recordLeadEvent(trx, { type: 'lead.created', leadId, time: ctx.now() });
  else if (before !== status) {
    await recordLeadEvent(trx, { type: 'lead.statusChanged', leadId, previousStatus: LeadStatus.toName(before), time: ctx.now() });
  }
};
