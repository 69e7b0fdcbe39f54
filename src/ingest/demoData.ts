import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { loadNdjson, LoadSummary } from './loader/loadNdjson';
import { PROJECT_ROOT } from '../config/paths';

/**
 * The small demo data set (docs/decisions.md, Command line): `lcm seed-demo`, and what `serve` loads on a fresh
 * embedded database. The data is db/seeds/demo.ndjson, loaded with the ordinary loader; every
 * record has a natural key or unique id, so seeding again updates instead of duplicating.
 * Its calls are on fixed dates, Monday 2026-11-16 to Friday 2026-11-20 (platform time).
 */
const DEMO_DATA_FILE = path.join(PROJECT_ROOT, 'db/seeds/demo.ndjson');

export interface DemoCredential {
  username: string;
  password: string;
  note: string;
}

export const DEMO_CREDENTIALS: readonly DemoCredential[] = [
  { username: 'demo', password: 'demo-password', note: 'every right, every project (*), entry access Full' },
  {
    username: 'b2b',
    password: 'b2b-password',
    note: 'projects B2B*, Get on Calls, Leads, SimpleLeads and Organization, entry access Partner',
  },
];

export async function seedDemo(db: Knex, zone: string): Promise<LoadSummary> {
  return loadNdjson(db, fs.createReadStream(DEMO_DATA_FILE), { zone });
}
