import type http from 'node:http';

/**
 * The options of a raw `POST /api/leads/bulk` into one campaign over a real socket, for tests
 * that stream the body themselves, leave mid-request, or read the answer as it arrives.
 */
export function bulkImportRequest(port: number, campaignCode: string, headers: Record<string, string>): http.RequestOptions {
  return {
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: `/api/leads/bulk?CampaignCode=${encodeURIComponent(campaignCode)}`,
    headers,
  };
}
