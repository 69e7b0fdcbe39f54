import type { LeadFieldRule } from './leadData';

/** Leads as the exports read them, and how one request names the ids they carry. */

/**
 * A lead as the exports read it: its own columns only, references as ids (named through
 * LeadLookups); times are epoch milliseconds.
 */
export interface LeadRow {
  uniqueId: string;
  status: number;
  closure: number;
  priority: number;
  phoneNumber: string | null;
  externalKey: string | null;
  campaignId: number;
  poolId: number;
  /** The stored data as JSON text (jsonb output: keys in Postgres's order); not yet limited by entry access. */
  dataJson: string;
  /**
   * Every stored key is a field of the lead's definition that the account's entry access
   * reaches (decided in SQL): the stored text can be written as it is.
   */
  dataVisible: boolean;
  uploadTime: number;
  lastModifiedTime: number;
  firstProcessedTime: number | null;
  ownerOrgUnitId: number | null;
  uploadedByUserId: number | null;
  lastModifiedByUserId: number | null;
  firstProcessedByUserId: number | null;
  /** The closure data as JSON text (jsonb output), written into exports as it is. */
  closureDataJson: string;
}

/** Only the columns the RawLeads export needs. */
export interface RawLeadRow {
  uniqueId: string;
  campaignId: number;
  data: Record<string, string>;
}

export interface LeadCampaign {
  uniqueId: string;
  code: string;
  leadDefinitionId: number;
}

/** How the ids of lead rows are named, for one request. */
export interface LeadLookups {
  /** The campaigns the request can reach (project scope and the filter's campaign selection). */
  campaigns: Map<number, LeadCampaign>;
  /** Pool names of those campaigns. */
  pools: Map<number, string>;
  /** Org codes of every user and org unit. */
  users: Map<number, string>;
  units: Map<number, string>;
  /** The fields of those campaigns' lead definitions, in sort order. */
  definitions: Map<number, LeadFieldRule[]>;
}
