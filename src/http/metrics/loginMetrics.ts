import { Counter, type Registry } from 'prom-client';
import type { OverloadMetrics } from './overloadMetrics';

/** Login protection: password checks by outcome, and logins refused (counted with the other refusals). */
export class LoginMetrics {
  private readonly passwordChecks: Counter<'outcome'>;

  constructor(
    registry: Registry,
    private readonly overload: OverloadMetrics,
  ) {
    this.passwordChecks = new Counter({
      name: 'lcm_password_checks_total',
      help: 'Password (scrypt) checks run, by outcome: passed or failed (each failed one a guess the login limits let through)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    for (const outcome of ['passed', 'failed']) this.passwordChecks.inc({ outcome }, 0);
  }

  /** One password check and whether it passed. */
  countPasswordCheck(passed: boolean): void {
    this.passwordChecks.inc({ outcome: passed ? 'passed' : 'failed' });
  }

  /** A login turned away: too many failed ones (login) or too many waiting for a check (hashing). */
  countRefused(reason: 'login' | 'hashing'): void {
    this.overload.countRefused(reason);
  }
}
