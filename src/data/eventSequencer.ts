import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import { sequenceEvents } from './liveEvents';

export interface EventSequencerOptions {
  db: Knex;
  /** Pause between the end of one round and the start of the next. */
  intervalMs: number;
  /** Told once when rounds start failing (the database is away) and once when they work again. */
  logger: Logger;
}

/**
 * Runs sequencing rounds (src/data/liveEvents.ts) one after the other while started: writers only
 * list their events, and these rounds number what has committed, so the live streams see it.
 * A round that finds another in progress gives way to it. Processes with open streams run rounds
 * often; the jobs process runs them slowly, so the list stays short when nobody streams.
 */
export class EventSequencer {
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  /** A round is in progress: its end schedules the next. */
  private running = false;
  private failing = false;

  constructor(private readonly options: EventSequencerOptions) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    if (!this.running) this.schedule();
  }

  stop(): void {
    this.started = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (!this.started) return;
    this.timer = setTimeout(() => void this.round(), this.options.intervalMs);
    this.timer.unref();
  }

  private async round(): Promise<void> {
    this.running = true;
    try {
      await sequenceEvents(this.options.db, false);
      if (this.failing) {
        this.failing = false;
        this.options.logger.info({}, 'live events numbered again');
      }
    } catch (err) {
      if (!this.failing) {
        this.failing = true;
        this.options.logger.warn({ err }, 'live events could not be numbered; trying again');
      }
    } finally {
      this.running = false;
      this.schedule();
    }
  }
}
