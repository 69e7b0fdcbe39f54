import fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const services = (globalThis as Record<string, unknown>).__lcmServices as
    { cluster: { stop(): Promise<void> }; redis: { stop(): Promise<void> }; root: string } | undefined;
  if (!services) return;
  await services.redis.stop();
  await services.cluster.stop();
  fs.rmSync(services.root, { recursive: true, force: true });
}
