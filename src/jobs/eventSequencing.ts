import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import { EventSequencer } from '../data/eventSequencer';

/** Rounds of the jobs process: often enough that the list of unnumbered events stays short. */
const BACKGROUND_SEQUENCE_MS = 1000;

/**
 * Numbers committed live events every second in the jobs process (src/data/eventSequencer.ts),
 * whether or not any stream is open: the processes with open streams run their own rounds far
 * more often, and a stream or JSON list runs one before it reads.
 */
export function startEventSequencing(db: Knex, logger: Logger): () => void {
  const sequencer = new EventSequencer({
    db,
    intervalMs: BACKGROUND_SEQUENCE_MS,
    logger,
  });
  sequencer.start();
  return () => sequencer.stop();
}
