import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { Knex } from 'knex';
import { openCliContext } from './context';
import type { SetExit } from './main';
import { loadNdjson, LoadSummary } from '../data/loader/loadNdjson';
import { notifyAccountChanged } from '../data/accountCommands';

/**
 * The small demo data set (DESIGN §9): `lcm seed-demo`, and what `serve` loads on a fresh
 * embedded database. The data is db/seeds/demo.ndjson, loaded with the ordinary loader; every
 * record has a natural key or unique id, so seeding again updates instead of duplicating.
 * Its calls are on fixed dates, Monday 2026-11-16 to Friday 2026-11-20 (platform time).
 */
export const DEMO_DATA_FILE = path.resolve(__dirname, '../../db/seeds/demo.ndjson');

export interface DemoCredential {
  username: string;
  password: string;
  note: string;
}

export const DEMO_CREDENTIALS: readonly DemoCredential[] = [
  { username: 'demo', password: 'demo-password', note: 'every right, every project (*), entry access Full' },
  { username: 'b2b', password: 'b2b-password', note: 'projects B2B*, Get on Calls, Leads, SimpleLeads and Organization, entry access Partner' },
];

export async function seedDemo(db: Knex, zone: string): Promise<LoadSummary> {
  return loadNdjson(db, fs.createReadStream(DEMO_DATA_FILE), { zone });
}

export function registerSeedDemo(program: Command, _setExit: SetExit): void {
  program
    .command('seed-demo')
    .description('load the small demo data set (org units, users, campaigns, leads, calls, accounts)')
    .action(async () => {
      const ctx = await openCliContext();
      try {
        const summary = await seedDemo(ctx.db, ctx.settings.PLATFORM_TIMEZONE);
        const parts = Object.entries(summary.counts).map(([type, n]) => `${n} ${type}`);
        process.stdout.write(`loaded the demo data set: ${parts.join(', ')}\n`);
        for (const c of DEMO_CREDENTIALS) process.stdout.write(`  account ${c.username} / ${c.password}: ${c.note}\n`);
        const ids = await ctx.db('accounts').whereIn('username', DEMO_CREDENTIALS.map((c) => c.username)).pluck('id');
        try {
          await notifyAccountChanged(ctx.settings.REDIS_URL, ids);
        } catch (err) {
          process.stderr.write(`lcm: warning: could not announce the account changes on Redis: ${(err as Error).message}\n`);
        }
      } finally {
        await ctx.close();
      }
    });
}
