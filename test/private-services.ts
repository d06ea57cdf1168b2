import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';

/**
 * Private instances of the services the fleet uses, for tests that take
 * them away (outages): each on a free port, stopped by pid, started again
 * on the same port. Tests that only need the services use the machine's.
 */

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  server.close();
  return port;
}

/** A redis-server of the test's own on `port`, answering once this resolves. */
export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
  // Refused until the server listens: retried, not reported.
  probe.on('error', () => {});
  await probe.connect().catch(() => {});
  await probe.ping();
  probe.disconnect();
  return child;
}

const PG_BIN = '/usr/lib/postgresql/15/bin';
const run = promisify(execFile);

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  readonly url: string;
  readonly port: number;
  /** Start it again after stop(), on the same port and data. */
  start(): Promise<void>;
  /** Stop the server by its pid (SIGQUIT: at once, as a crash or a cut cable would look to clients). */
  stop(): Promise<void>;
  /** Stop it and remove its data. */
  destroy(): Promise<void>;
}

/**
 * A PostgreSQL 15 server of the test's own: initdb into a temporary
 * directory and pg_ctl start on a free port. Both refuse to run as root, so
 * as root they run as the `postgres` user (runuser), who owns the directory.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const root = await mkdtemp(join(tmpdir(), 'upi-risk-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const uid = Number(stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    await chown(root, uid, gid);
  }
  const pgRun = (command: string, args: readonly string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(PG_BIN, command), ...args]) : run(join(PG_BIN, command), [...args]);
  const data = join(root, 'data');
  await pgRun('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const port = await freePort();
  const start = async () => {
    await pgRun('pg_ctl', ['-D', data, '-l', join(root, 'server.log'), '-w', '-t', '30', '-o', `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`, 'start']);
  };
  const stop = async () => {
    const pid = Number((await readFile(join(data, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0) return;
    try {
      process.kill(pid, 'SIGQUIT');
    } catch {
      return;
    }
    for (let waited = 0; waited < 30_000; waited += 50) {
      try {
        process.kill(pid, 0);
      } catch {
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`private PostgreSQL (pid ${pid}) did not stop`);
  };
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  // Answering once pg_ctl says it started; checked, so a test never races the first connection.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.end();
  return {
    url,
    port,
    start,
    stop,
    async destroy() {
      await stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}
