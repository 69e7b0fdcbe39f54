import type { Knex } from 'knex';
import type { Settings } from '../config/settings';

/**
 * What every `lcm` command runs on: the settings and a database. The composition root
 * (src/app/cliContext.ts) opens it: DATABASE_URL, or the embedded default database.
 */
export interface CliContext {
  settings: Settings;
  db: Knex;
  embedded: boolean;
  /** True when the embedded cluster was created by this run (first start). */
  freshCluster: boolean;
  close(): Promise<void>;
}

/** Opens the context of one command; `migrate: false` skips migrating the embedded database. */
export type OpenCliContext = (options?: { migrate?: boolean }) => Promise<CliContext>;

/** A failure the operator caused (a bad argument, a missing file): its message is the whole story. */
export class CliError extends Error {}
