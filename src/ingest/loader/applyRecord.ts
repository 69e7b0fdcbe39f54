import { toE164 } from '../../domain/phoneNumber';
import { defaultPhoneRegion } from '../../config/platform';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import {
  CallEndCause,
  CallLeadStatus,
  CampaignType,
  EntryAccess,
  FieldType,
  LeadClosure,
  LeadStatus,
  PreCallLeadStatus,
  RecordingType,
} from '../../domain/enums';
import { timeSpanToMillis, timeSpanToPgInterval, TimeSpan } from '../../domain/timespan';
import { localDate } from '../../domain/datetime';
import { mapLeadData, LeadFieldRule } from '../../domain/leadData';
import { AccountCommandError, upsertAccount } from '../accountCommands';
import { ensurePool, autoPoolName } from '../../data/leadPools';
import { applyCallOutcomeToLead } from '../../data/leadLifecycleRepository';
import { CALLS, READY_PERIODS, PartitionedKey, findKey, upsertByUniqueId } from '../../data/uniqueIdRegistry';
import { recordCallEvent, recordLeadEvent } from '../../data/hookEvents';
import type { LoadRecord, RecordType } from './recordSchemas';

/** A row of lead_definition_fields. */
interface FieldRow {
  id: number;
  lead_definition_id: number;
  name: string;
  import_name: string | null;
  type: FieldType;
  required: boolean;
  sort_order: number;
  editable: boolean;
  access: number;
  external_key: boolean;
}

/** A reason the record cannot be loaded; the loader prefixes the line number. */
export class RecordError extends Error {}

/**
 * Upserts records inside one transaction. References are natural keys resolved here (and
 * cached for the file); a record keyed by `uniqueId` without one gets a new id.
 */
export class RecordApplier {
  private readonly units = new Map<string, { id: number; level: number; chain: number[] }>();
  private readonly users = new Map<string, { id: number; parentId: number | null }>();
  private readonly campaigns = new Map<string, { id: number; campaignType: number; leadDefinitionId: number }>();
  private readonly fields = new Map<number, LeadFieldRule[]>();

  constructor(
    private readonly trx: Knex.Transaction,
    private readonly zone: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async apply(record: LoadRecord): Promise<void> {
    const handlers: { [T in RecordType]: (r: LoadRecord<T>) => Promise<void> } = {
      orgUnit: (r) => this.orgUnit(r),
      user: (r) => this.user(r),
      leadDefinition: (r) => this.leadDefinition(r),
      campaign: (r) => this.campaign(r),
      lead: (r) => this.lead(r),
      call: (r) => this.call(r),
      recording: (r) => this.recording(r),
      readyPeriod: (r) => this.readyPeriod(r),
      calendar: (r) => this.calendar(r),
      calendarEvent: (r) => this.calendarEvent(r),
      savedSearch: (r) => this.savedSearch(r),
      account: (r) => this.account(r),
      requestLimit: (r) => this.requestLimit(r),
    };
    await (handlers[record.type] as (r: LoadRecord) => Promise<void>)(record);
  }

  // ---- references -------------------------------------------------------------------------

  private async unit(orgCode: string): Promise<{ id: number; level: number; chain: number[] }> {
    const cached = this.units.get(orgCode);
    if (cached) return cached;
    const { rows } = await this.trx.raw<{ rows: { id: number; level: number }[] }>(
      `with recursive up as (
         select id, parent_id, level from org_units where org_code = ?
         union all
         select o.id, o.parent_id, o.level from org_units o join up on o.id = up.parent_id)
       select id, level from up order by level`,
      [orgCode],
    );
    if (rows.length === 0) throw new RecordError(`unknown org unit ${JSON.stringify(orgCode)}`);
    const chain = rows.map((r) => r.id);
    const found = { id: chain[chain.length - 1]!, level: rows[rows.length - 1]!.level, chain };
    this.units.set(orgCode, found);
    return found;
  }

  private async userRef(orgCode: string): Promise<{ id: number; parentId: number | null }> {
    const cached = this.users.get(orgCode);
    if (cached) return cached;
    const row = await this.trx('users')
      .where({ org_code: orgCode })
      .first<{ id: number; parent_id: number | null } | undefined>('id', 'parent_id');
    if (!row) throw new RecordError(`unknown user ${JSON.stringify(orgCode)}`);
    const found = { id: row.id, parentId: row.parent_id };
    this.users.set(orgCode, found);
    return found;
  }

  private async campaignRef(code: string) {
    const cached = this.campaigns.get(code);
    if (cached) return cached;
    const row = await this.trx('campaigns')
      .where({ code })
      .first<{ id: number; campaign_type: number; lead_definition_id: number } | undefined>('id', 'campaign_type', 'lead_definition_id');
    if (!row) throw new RecordError(`unknown campaign ${JSON.stringify(code)}`);
    const found = { id: row.id, campaignType: row.campaign_type, leadDefinitionId: row.lead_definition_id };
    this.campaigns.set(code, found);
    return found;
  }

  private async fieldRules(leadDefinitionId: number): Promise<LeadFieldRule[]> {
    const cached = this.fields.get(leadDefinitionId);
    if (cached) return cached;
    const rows = await this.trx<FieldRow>('lead_definition_fields').where({ lead_definition_id: leadDefinitionId }).orderBy('id');
    const rules = rows.map((f) => ({
      name: f.name,
      importName: f.import_name,
      type: f.type,
      required: f.required,
      access: EntryAccess.toName(f.access),
      externalKey: f.external_key,
      sortOrder: f.sort_order,
    }));
    this.fields.set(leadDefinitionId, rules);
    return rules;
  }

  private async optionalUserId(orgCode: string | undefined): Promise<number | null> {
    return orgCode === undefined ? null : (await this.userRef(orgCode)).id;
  }

  // ---- organisation -----------------------------------------------------------------------

  private async orgUnit(r: LoadRecord<'orgUnit'>) {
    const parent = r.parent === undefined ? undefined : await this.unit(r.parent);
    const level = parent ? parent.level + 1 : 0;
    if (level > 4) throw new RecordError(`org unit ${JSON.stringify(r.orgCode)} would be at level ${level}; levels go from 0 to 4`);
    const existing = await this.trx('org_units')
      .where({ org_code: r.orgCode })
      .first<{ id: number; level: number } | undefined>('id', 'level');
    if (existing && existing.level !== level) {
      throw new RecordError(`org unit ${JSON.stringify(r.orgCode)} cannot move to another level (${existing.level} → ${level})`);
    }
    await this.claimOrgCode(r.orgCode, 'unit');
    await this.trx('org_units')
      .insert({ unique_id: r.uniqueId ?? randomUUID(), org_code: r.orgCode, name: r.name, level, parent_id: parent?.id ?? null })
      .onConflict('org_code')
      .merge(['name', 'parent_id', ...(r.uniqueId ? ['unique_id'] : [])]);
    this.units.clear();
  }

  /** Gives a clear line error when the code is taken by the other kind (users vs units). */
  private async claimOrgCode(orgCode: string, kind: 'user' | 'unit') {
    const row = await this.trx('org_codes').where({ org_code: orgCode }).first<{ kind: 'user' | 'unit' } | undefined>('kind');
    if (row && row.kind !== kind) {
      throw new RecordError(`org code ${JSON.stringify(orgCode)} is already used by ${row.kind === 'user' ? 'a user' : 'an org unit'}`);
    }
  }

  private async user(r: LoadRecord<'user'>) {
    const parent = r.parent === undefined ? null : (await this.unit(r.parent)).id;
    await this.claimOrgCode(r.orgCode, 'user');
    const values = {
      org_code: r.orgCode,
      username: r.username,
      name: r.name,
      parent_id: parent,
      email: r.email ?? null,
      inbound_phone_number: r.inboundPhoneNumber ?? null,
      roles: r.roles ?? [],
      employee_number: r.employeeNumber ?? null,
      payroll_number: r.payrollNumber ?? null,
    };
    const [row] = await this.trx('users')
      .insert({ unique_id: r.uniqueId ?? randomUUID(), ...values })
      .onConflict('org_code')
      .merge([...Object.keys(values).filter((k) => k !== 'org_code'), ...(r.uniqueId ? ['unique_id'] : [])])
      .returning<{ id: number }[]>('id');
    this.users.delete(r.orgCode);
    if (r.campaigns !== undefined) {
      await this.trx('user_campaigns').where({ user_id: row!.id }).delete();
      for (const code of r.campaigns) {
        const c = await this.campaignRef(code);
        await this.trx('user_campaigns').insert({ user_id: row!.id, campaign_id: c.id }).onConflict().ignore();
      }
    }
  }

  // ---- campaigns and leads ----------------------------------------------------------------

  private async leadDefinition(r: LoadRecord<'leadDefinition'>) {
    const names = new Set<string>();
    for (const f of r.fields) {
      const key = f.name.toLowerCase();
      if (names.has(key)) throw new RecordError(`field ${JSON.stringify(f.name)} appears twice`);
      names.add(key);
    }
    if (r.fields.filter((f) => f.externalKey).length > 1) throw new RecordError('only one field can be the external key');
    const [def] = await this.trx('lead_definitions')
      .insert({ unique_id: r.uniqueId ?? randomUUID(), name: r.name })
      .onConflict('name')
      .merge(r.uniqueId ? ['unique_id'] : ['name'])
      .returning<{ id: number }[]>('id');
    // The definition's fields are replaced as a whole: the record is the full description.
    await this.trx('lead_definition_fields').where({ lead_definition_id: def!.id }).delete();
    await this.trx('lead_definition_fields').insert(
      r.fields.map((f, i) => ({
        lead_definition_id: def!.id,
        name: f.name,
        import_name: f.importName ?? null,
        type: f.type,
        required: f.required ?? false,
        sort_order: f.sortOrder ?? i,
        editable: f.editable ?? true,
        access: EntryAccess.toNumber(f.access ?? 'None'),
        external_key: f.externalKey ?? false,
      })),
    );
    this.fields.delete(def!.id);
  }

  private async campaign(r: LoadRecord<'campaign'>) {
    const def = await this.trx('lead_definitions').where({ name: r.leadDefinition }).first<{ id: number } | undefined>('id');
    if (!def) throw new RecordError(`unknown lead definition ${JSON.stringify(r.leadDefinition)}`);
    const interval = (ts: TimeSpan | undefined) => (ts === undefined ? null : timeSpanToPgInterval(ts));
    const values = {
      code: r.code,
      name: r.name,
      project: r.project,
      lead_definition_id: def.id,
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
    };
    await this.trx('campaigns')
      .insert({ unique_id: r.uniqueId ?? randomUUID(), ...values })
      .onConflict('code')
      .merge([...Object.keys(values).filter((k) => k !== 'code'), ...(r.uniqueId ? ['unique_id'] : [])]);
    this.campaigns.delete(r.code);
  }

  private async lead(r: LoadRecord<'lead'>) {
    const campaign = await this.campaignRef(r.campaign);
    const mapped = mapLeadData(await this.fieldRules(campaign.leadDefinitionId), r.data, this.zone);
    if (mapped.errors.length > 0) {
      throw new RecordError(mapped.errors.map((e) => `data.${e.field} ${e.message}`).join('; '));
    }
    const uploadTime = r.uploadTime ?? this.now();
    const poolId = await ensurePool(this.trx, campaign.id, r.pool ?? autoPoolName(localDate(uploadTime, this.zone)));
    const lastModified = r.lastModifiedTime ?? uploadTime;
    const values = {
      campaign_id: campaign.id,
      pool_id: poolId,
      status: LeadStatus.toNumber(r.status ?? 'New'),
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
      owner_org_unit_id: r.ownerOrgUnit === undefined ? null : (await this.unit(r.ownerOrgUnit)).id,
      uploaded_by_user_id: await this.optionalUserId(r.uploadedByUser),
      last_modified_by_user_id: await this.optionalUserId(r.lastModifiedByUser),
      first_processed_by_user_id: await this.optionalUserId(r.firstProcessedByUser),
    };
    const before =
      r.uniqueId === undefined
        ? undefined
        : await this.trx('leads').where({ unique_id: r.uniqueId }).first<{ status: number } | undefined>('status');
    const [row] = await this.trx('leads')
      .insert({ unique_id: r.uniqueId ?? randomUUID(), ...values })
      .onConflict('unique_id')
      .merge(Object.keys(values))
      .returning<{ id: number }[]>('id');
    // A new lead is lead.created; a reloaded one whose status moved is lead.statusChanged.
    if (before === undefined) await recordLeadEvent(this.trx, { type: 'lead.created', leadId: row!.id, time: this.now() });
    else if (before.status !== values.status) {
      const previousStatus = LeadStatus.toName(before.status);
      await recordLeadEvent(this.trx, { type: 'lead.statusChanged', leadId: row!.id, previousStatus, time: this.now() });
    }
  }

  // ---- calls ------------------------------------------------------------------------------

  private async call(r: LoadRecord<'call'>) {
    const rule = (ok: boolean, message: string) => {
      if (!ok) throw new RecordError(message);
    };
    // The Call field rules (docs/decisions.md, Loader).
    rule(r.connectTime === undefined || r.connected, 'connectTime is only present when connected is true');
    rule(r.endTime === undefined || !r.inProgress, 'endTime is only present when the call is not in progress');
    rule(
      r.conversationDuration === undefined || (r.connected && !r.inProgress),
      'conversationDuration needs a connected call that is not in progress',
    );
    rule(r.leadClosure === undefined || r.leadStatus === 'UserProcessed', 'leadClosure is only present when leadStatus is UserProcessed');

    const campaign = await this.campaignRef(r.campaign);
    const user = await this.userRef(r.user);
    let chain: number[];
    if (r.organizationalUnits !== undefined) {
      chain = [];
      for (const code of r.organizationalUnits) chain.push((await this.unit(code)).id);
      const deepest = await this.unit(r.organizationalUnits[r.organizationalUnits.length - 1]!);
      rule(
        deepest.chain.length === chain.length && deepest.chain.every((id, i) => id === chain[i]),
        'organizationalUnits must be a chain of org units from the root down',
      );
    } else {
      rule(user.parentId !== null, `user ${JSON.stringify(r.user)} belongs to no org unit; give organizationalUnits`);
      const row = await this.trx('org_units').where({ id: user.parentId! }).first<{ org_code: string } | undefined>('org_code');
      chain = (await this.unit(row!.org_code)).chain;
    }
    const ms = (ts: TimeSpan | undefined) => {
      if (ts === undefined) return null;
      try {
        return timeSpanToMillis(ts);
      } catch (err) {
        throw new RecordError((err as Error).message);
      }
    };
    const lead = await this.trx('leads').where({ unique_id: r.uniqueLeadId }).first<{ id: number } | undefined>('id');
    // Through the registry: calls has no index on unique_id alone (month partitions).
    const known = r.uniqueId === undefined ? undefined : await findKey(this.trx, CALLS, r.uniqueId);
    const before =
      known === undefined
        ? undefined
        : await this.trx('calls')
            .where({ id: known.id, start_time: known.time })
            .first<{ in_progress: boolean } | undefined>('in_progress');
    const values = {
      campaign_id: campaign.id,
      lead_id: lead?.id ?? null,
      unique_lead_id: r.uniqueLeadId,
      user_id: user.id,
      ou0_id: chain[0],
      ou1_id: chain[1] ?? null,
      ou2_id: chain[2] ?? null,
      ou3_id: chain[3] ?? null,
      ou4_id: chain[4] ?? null,
      lead_phone_number: r.leadPhoneNumber,
      lead_external_key: r.leadExternalKey ?? null,
      end_cause: CallEndCause.toNumber(r.endCause),
      in_progress: r.inProgress,
      connected: r.connected,
      incoming: r.incoming,
      start_time: r.startTime,
      connect_time: r.connectTime ?? null,
      end_time: r.endTime ?? null,
      preview_ms: ms(r.previewDuration),
      dialing_ms: ms(r.dialingDuration),
      conversation_ms: ms(r.conversationDuration),
      wrap_up_ms: ms(r.wrapUpDuration),
      lead_status: r.leadStatus === undefined ? null : CallLeadStatus.toNumber(r.leadStatus),
      pre_call_lead_status: r.preCallLeadStatus === undefined ? null : PreCallLeadStatus.toNumber(r.preCallLeadStatus),
      lead_closure: r.leadClosure === undefined ? null : LeadClosure.toNumber(r.leadClosure),
      campaign_type: r.campaignType === undefined ? campaign.campaignType : CampaignType.toNumber(r.campaignType),
    };
    const key = await upsertByUniqueId(this.trx, CALLS, r.uniqueId ?? randomUUID(), values);
    if (r.applyOutcome) await this.applyOutcome(key);
    // call.ended once: when a completed call is first loaded, or loaded again after it was in progress.
    if (!r.inProgress && (before === undefined || before.in_progress)) {
      await recordCallEvent(this.trx, { callId: key.id, startTime: key.time, time: this.now() });
    }
  }

  /** Hook for the lead lifecycle: applies a loaded call's outcome to its lead. */
  private async applyOutcome(call: PartitionedKey): Promise<void> {
    try {
      const change = await applyCallOutcomeToLead(this.trx, call);
      if (change) {
        await recordLeadEvent(this.trx, {
          type: 'lead.statusChanged',
          leadId: change.leadId,
          previousStatus: change.previousStatus,
          time: this.now(),
        });
      }
    } catch (err) {
      throw new RecordError((err as Error).message);
    }
  }

  private async recording(r: LoadRecord<'recording'>) {
    const call = await findKey(this.trx, CALLS, r.call);
    if (!call) throw new RecordError(`unknown call ${JSON.stringify(r.call)}`);
    const values = {
      start_time: r.startTime,
      end_time: r.endTime ?? null,
      recording_type: RecordingType.toNumber(r.recordingType),
    };
    await this.trx('recordings')
      .insert({ call_id: call.id, call_start_time: call.time, file_name: r.fileName, ...values })
      .onConflict(['call_id', 'call_start_time', 'file_name'])
      .merge(Object.keys(values));
  }

  private async readyPeriod(r: LoadRecord<'readyPeriod'>) {
    const user = await this.userRef(r.orgCode);
    const campaign = await this.campaignRef(r.campaign);
    const values = {
      user_id: user.id,
      campaign_id: campaign.id,
      start_time: r.startTime,
      seconds: r.seconds,
      end_time: new Date(r.startTime.getTime() + r.seconds * 1000),
    };
    await upsertByUniqueId(this.trx, READY_PERIODS, r.uniqueId ?? randomUUID(), values);
  }

  // ---- calendars --------------------------------------------------------------------------

  private async calendar(r: LoadRecord<'calendar'>) {
    await this.trx('calendars')
      .insert({ code: r.code, name: r.name ?? null, project: r.project })
      .onConflict('code')
      .merge(['name', 'project']);
  }

  private async calendarEvent(r: LoadRecord<'calendarEvent'>) {
    const calendar = await this.trx('calendars').where({ code: r.calendarCode }).first<{ id: number } | undefined>('id');
    if (!calendar) throw new RecordError(`unknown calendar ${JSON.stringify(r.calendarCode)}`);
    if (r.start.getTime() > r.end.getTime()) throw new RecordError('start is after end');
    const values = {
      calendar_id: calendar.id,
      lead_unique_id: r.leadUniqueId,
      title: r.title,
      notes: r.notes,
      start_time: r.start,
      end_time: r.end,
      source: r.source,
      external_id: r.externalId,
    };
    await this.trx('calendar_events')
      .insert({ unique_id: r.uniqueId ?? randomUUID(), ...values })
      .onConflict('unique_id')
      .merge({ ...values, version: this.trx.raw('calendar_events.version + 1') });
  }

  // ---- accounts ---------------------------------------------------------------------------

  private async savedSearch(r: LoadRecord<'savedSearch'>) {
    const user = await this.userRef(r.user);
    for (const code of r.campaigns ?? []) await this.campaignRef(code);
    const values = {
      campaigns: r.campaigns ?? [],
      projects: r.projects ?? [],
      statuses: (r.statuses ?? []).map((s) => LeadStatus.toNumber(s)),
      lead_closures: (r.leadClosures ?? []).map((c) => LeadClosure.toNumber(c)),
      all_open_statuses: r.allOpenStatuses ?? false,
      all_closed_statuses: r.allClosedStatuses ?? false,
    };
    await this.trx('saved_searches')
      .insert({ user_id: user.id, name: r.name, ...values })
      .onConflict(['user_id', 'name'])
      .merge(Object.keys(values));
  }

  private async account(r: LoadRecord<'account'>) {
    try {
      // The same upsert as `lcm account`: hashed password, version bumped for cached credentials.
      await upsertAccount(this.trx, {
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
  }

  private async requestLimit(r: LoadRecord<'requestLimit'>) {
    const account = await this.trx('accounts').where({ username: r.account }).first<{ id: number } | undefined>('id');
    if (!account) throw new RecordError(`unknown account ${JSON.stringify(r.account)}`);
    await this.trx('request_limits')
      .insert({ account_id: account.id, service: r.service, daily_limit: r.dailyLimit })
      .onConflict(['account_id', 'service'])
      .merge(['daily_limit']);
  }
}
