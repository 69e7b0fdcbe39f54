import pino, { Logger } from 'pino';

export type { Logger };

/** Structured JSON logs; credentials never reach a log line. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'lead-call-api' },
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'password', '*.password', 'password_hash', '*.password_hash'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
