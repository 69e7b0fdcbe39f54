import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/openapi';

export type { paths, components, operations } from './generated/openapi';

/** The value of X-Rate-Limit-Fair-Use-Policy that opts in to the fair use policy. */
export const FAIR_USE_POLICY = 'Minute rated';

export interface LcmClientOptions {
  /** Where the API is: `https://host` or `https://host/api` (the `/api` base path is added when missing). */
  baseUrl: string;
  username: string;
  password: string;
  /** Opt every request in to the fair use policy (each request adds 1; a minute limit applies too). */
  fairUse?: boolean;
  /** A fetch of your own (tests, proxies); defaults to the global fetch. */
  fetch?: (input: Request) => Promise<Response>;
}

/** `https://host` or `https://host/api/` → `https://host/api`. */
export function apiBaseUrl(url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  return trimmed.endsWith('/api') ? trimmed : `${trimmed}/api`;
}

/** `Basic base64(username:password)`, UTF-8 as the API expects. */
export function basicAuthorization(username: string, password: string): string {
  return 'Basic ' + Buffer.from(`${username}:${password}`, 'utf8').toString('base64');
}

/**
 * A typed client of the API: paths, parameters and bodies are checked against the types
 * generated from the OpenAPI document (src/generated/openapi.ts). Every request carries the
 * Basic credentials and asks for a compressed response (`Accept-Encoding: br, gzip`); fetch
 * decodes whatever encoding the server chose.
 *
 *   const api = createLcmClient({ baseUrl: 'http://127.0.0.1:8080', username: 'demo', password: 'demo-password' });
 *   const { data, error } = await api.GET('/myaccount');
 */
export function createLcmClient(options: LcmClientOptions): Client<paths> {
  const headers: Record<string, string> = {
    Authorization: basicAuthorization(options.username, options.password),
    'Accept-Encoding': 'br, gzip',
  };
  if (options.fairUse) headers['X-Rate-Limit-Fair-Use-Policy'] = FAIR_USE_POLICY;
  return createClient<paths>({ baseUrl: apiBaseUrl(options.baseUrl), headers, ...(options.fetch ? { fetch: options.fetch } : {}) });
}
