import type { Registry } from 'prom-client';
import type { CliContext } from '../cli/context';
import { createLogger } from '../config/logger';
import { startHookWorker, HookWorker } from '../jobs/hookWorker';

/** Starts the hook delivery workers of a process on its database (`lcm serve`, `lcm hooks work`). */
export function startHookWorkers(ctx: Pick<CliContext, 'db' | 'settings'>, registry?: Registry): Promise<HookWorker> {
  return startHookWorker({
    db: ctx.db,
    settings: ctx.settings,
    logger: createLogger(ctx.settings.LOG_LEVEL),
    ...(registry ? { registry } : {}),
  });
}
