import type { Knex } from 'knex';
import { EntryAccess } from '../../domain/enums';
import type { LeadFieldRule } from '../../domain/leadData';
import { findUnitChain, findUser, type UnitChain, type UserRef } from '../../data/loader/organization';
import { findCampaign, listFields, type CampaignRef } from '../../data/loader/campaigns';
import { RecordError } from './recordError';

/**
 * The natural keys a load file references (org codes, campaign codes, lead definitions),
 * resolved once per file and cached; an applier that changes one forgets it. An unknown key is
 * the record's error.
 */
export class LoadReferences {
  private readonly units = new Map<string, UnitChain>();
  private readonly users = new Map<string, UserRef>();
  private readonly campaigns = new Map<string, CampaignRef>();
  private readonly fields = new Map<number, LeadFieldRule[]>();

  constructor(private readonly trx: Knex.Transaction) {}

  async unit(orgCode: string): Promise<UnitChain> {
    const cached = this.units.get(orgCode);
    if (cached) return cached;
    const found = await findUnitChain(this.trx, orgCode);
    if (!found) throw new RecordError(`unknown org unit ${JSON.stringify(orgCode)}`);
    this.units.set(orgCode, found);
    return found;
  }

  async user(orgCode: string): Promise<UserRef> {
    const cached = this.users.get(orgCode);
    if (cached) return cached;
    const found = await findUser(this.trx, orgCode);
    if (!found) throw new RecordError(`unknown user ${JSON.stringify(orgCode)}`);
    this.users.set(orgCode, found);
    return found;
  }

  async optionalUserId(orgCode: string | undefined): Promise<number | null> {
    return orgCode === undefined ? null : (await this.user(orgCode)).id;
  }

  async campaign(code: string): Promise<CampaignRef> {
    const cached = this.campaigns.get(code);
    if (cached) return cached;
    const found = await findCampaign(this.trx, code);
    if (!found) throw new RecordError(`unknown campaign ${JSON.stringify(code)}`);
    this.campaigns.set(code, found);
    return found;
  }

  async fieldRules(leadDefinitionId: number): Promise<LeadFieldRule[]> {
    const cached = this.fields.get(leadDefinitionId);
    if (cached) return cached;
    const rules = (await listFields(this.trx, leadDefinitionId)).map((f) => ({
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

  /** A unit was added or moved: every cached chain may be stale. */
  forgetUnits(): void {
    this.units.clear();
  }

  forgetUser(orgCode: string): void {
    this.users.delete(orgCode);
  }

  forgetCampaign(code: string): void {
    this.campaigns.delete(code);
  }

  forgetFields(leadDefinitionId: number): void {
    this.fields.delete(leadDefinitionId);
  }
}
