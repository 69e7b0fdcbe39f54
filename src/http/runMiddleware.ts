import type { Request, RequestHandler, Response } from 'express';

/** Runs an Express middleware as a promise (without promisify, which makes a function per call). */
export function runMiddleware(handler: RequestHandler, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => {
    void handler(req, res, (err?: unknown) => {
      if (err === undefined || err === null) resolve();
      else reject(err instanceof Error ? err : new Error('middleware failed', { cause: err }));
    });
  });
}
