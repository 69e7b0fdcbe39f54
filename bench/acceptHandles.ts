/**
 * What accepting through several handles costs when every request comes on a new connection
 * (src/app/acceptHandles.ts): each connection wakes every handle, and all but one find nothing
 * to accept. A plain HTTP server answering `ok` (the least work a request can be, so the cost
 * shows), clients in a child process opening a connection per request, `--clients` at once for
 * `--seconds`; the server's CPU per connection, alternating 1 and `--handles` handles.
 *
 *   npm run bench:accept -- --handles 8 --clients 32 --seconds 5 --pairs 3
 */
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fork } from 'node:child_process';
import { addAcceptHandles } from '../src/app/acceptHandles';
import { numberOption as option, median, fmt } from './support';

const settings = {
  handles: option('handles', 8),
  clients: option('clients', 32),
  seconds: option('seconds', 5),
  pairs: option('pairs', 3),
};

/** The client side: `clients` loops of GET on a new connection each, for `seconds`; reports the count. */
function runClients(port: number): void {
  let done = 0;
  const end = Date.now() + settings.seconds * 1000;
  const one = (): void => {
    if (Date.now() > end) return;
    http
      .get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
        res.resume();
        res.on('end', () => {
          done++;
          one();
        });
      })
      .on('error', () => one());
  };
  for (let i = 0; i < settings.clients; i++) one();
  setTimeout(
    () => {
      process.send!(done);
      process.exit(0);
    },
    settings.seconds * 1000 + 200,
  );
}

async function measure(handles: number): Promise<{ perSecond: number; cpuUs: number }> {
  const server = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const accepting = await addAcceptHandles(server, handles);
  if (accepting.reason) throw new Error(accepting.reason);
  const cpu0 = process.cpuUsage();
  // Through bin/run-ts.js, as this file runs (TypeScript).
  const child = fork(path.resolve(__dirname, '../bin/run-ts.js'), [
    __filename,
    '--client',
    String((server.address() as net.AddressInfo).port),
    ...process.argv.slice(2),
  ]);
  const done = await new Promise<number>((resolve) => child.once('message', (n) => resolve(n as number)));
  const cpu = process.cpuUsage(cpu0);
  server.closeAllConnections();
  await Promise.all([new Promise<void>((resolve) => server.close(() => resolve())), accepting.close()]);
  return { perSecond: done / settings.seconds, cpuUs: (cpu.user + cpu.system) / done };
}

async function main(): Promise<void> {
  const runs: Record<'one' | 'many', { perSecond: number; cpuUs: number }[]> = { one: [], many: [] };
  for (let i = 0; i < settings.pairs; i++) {
    runs.one.push(await measure(1));
    runs.many.push(await measure(settings.handles));
  }
  const line = (name: string, xs: { perSecond: number; cpuUs: number }[]) =>
    `| ${name} | ${xs.map((x) => fmt(x.perSecond)).join(', ')} | ${xs.map((x) => x.cpuUs.toFixed(0)).join(', ')} | ${median(xs.map((x) => x.cpuUs)).toFixed(0)} |`;
  console.log(`${settings.clients} clients, a new connection per request, ${settings.seconds} s a run, alternating\n`);
  console.log('| handles | requests/s | server CPU per connection, µs | median |');
  console.log('|---|---|---|---:|');
  console.log(line('1', runs.one));
  console.log(line(String(settings.handles), runs.many));
}

const clientAt = process.argv.indexOf('--client');
if (clientAt >= 0) runClients(Number(process.argv[clientAt + 1]));
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
