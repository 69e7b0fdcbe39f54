/** The columns of the calls COPY, in order (src/data/exportQueries.ts selects them). */
export const CALL_COPY_COLUMNS = [
  'unique_id',
  'unique_lead_id',
  'lead_phone_number',
  'lead_external_key',
  'end_cause',
  'in_progress',
  'connected',
  'incoming',
  'start_time',
  'connect_time',
  'end_time',
  'preview_ms',
  'dialing_ms',
  'conversation_ms',
  'wrap_up_ms',
  'lead_status',
  'pre_call_lead_status',
  'lead_closure',
  'campaign_type',
  'campaign_id',
  'user_id',
  'ou0_id',
  'ou1_id',
  'ou2_id',
  'ou3_id',
  'ou4_id',
] as const;

/** The columns of the ready-periods COPY, in order. */
export const READY_PERIOD_COPY_COLUMNS = ['unique_id', 'org_code', 'campaign_id', 'start_time', 'seconds', 'campaign_type'] as const;
