/** The columns of the lead COPY, in order (src/data/exportQueries.ts selects them). */
export const LEAD_COPY_COLUMNS = [
  'unique_id',
  'status',
  'closure',
  'priority',
  'phone_number',
  'external_key',
  'campaign_id',
  'pool_id',
  'data',
  'upload_time',
  'last_modified_time',
  'first_processed_time',
  'owner_org_unit_id',
  'uploaded_by_user_id',
  'last_modified_by_user_id',
  'first_processed_by_user_id',
  'closure_data',
  'data_visible',
] as const;

/** The columns of the RawLeads COPY, in order. */
export const RAW_LEAD_COPY_COLUMNS = ['unique_id', 'campaign_id', 'data'] as const;
