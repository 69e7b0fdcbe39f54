import type { CallWindow } from './callWindow';
import type { GenCampaign } from './campaigns';
import type { GenUser } from './organization';
import type { CallPlan, LeadPlan } from './plan';

/** What the COPY phases write their rows from: the run's keys and window, the inserted campaigns and users, and the plan. */
export interface RunRows {
  prefix: string;
  /** Lead l gets id leadBase + l; the n-th call in time order gets callBase + n. */
  leadBase: number;
  callBase: number;
  window: CallWindow;
  campaigns: GenCampaign[];
  users: GenUser[];
  leads: LeadPlan;
  calls: CallPlan;
}
