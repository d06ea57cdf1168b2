import { test } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import { readCopyOut, withPoolClient } from '../../src/store/copy-out.js';
import { storePool, type StoreLocation } from '../../src/store/postgres.js';
import { StoreNotifications } from '../../src/store/store-notifications.js';
import { migrate } from '../../src/store/migrations.js';
import { silentLogger } from '../../src/common/logger.js';
import { withTestSchema } from '../store-fixtures.js';
import { until } from '../helpers.js';

/**
 * A TCP proxy in front of PostgreSQL whose open connections can be made
 * silent: nothing passes either way and nothing is closed, as after a
 * failover or a firewall that dropped the connection's state. New
 * connections pass.
 */
async function silencingProxy(target: URL): Promise<{ url: (location: StoreLocation) => StoreLocation; silence: () => void; opened: () => number; close: () => Promise<void> }> {
  const pairs: { client: Socket; upstream: Socket; silent: boolean }[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    const pair = { client, upstream, silent: false };
    client.on('data', (data: Buffer) => void (pair.silent || upstream.write(data)));
    upstream.on('data', (data: Buffer) => void (pair.silent || client.write(data)));
    for (const socket of [client, upstream]) socket.on('error', () => {});
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    pairs.push(pair);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: (location) => {
      const url = new URL(location.url);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return { ...location, url: url.toString() };
    },
    silence: () => {
      for (const pair of pairs) pair.silent = true;
    },
    opened: () => pairs.length,
    close: async () => {
      for (const pair of pairs) pair.client.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

test('a COPY whose connection falls silent fails within its bound, and the next read opens a connection that works', { timeout: 60_000 }, () =>
  withTestSchema(async (location) => {
    const proxy = await silencingProxy(new URL(location.url));
    const through = proxy.url(location);
    const pool = storePool(through, 2);
    try {
      // Rows come a few at a time; the connection falls silent after the first piece.
      const sql = 'COPY (SELECT g, pg_sleep(0.05) FROM generate_series(1, 200) g) TO STDOUT';
      let pieces = 0;
      const started = Date.now();
      await assert.rejects(
        withPoolClient(pool, through, (client) =>
          readCopyOut(
            client,
            through,
            sql,
            () => {
              if (++pieces === 1) proxy.silence();
              return undefined;
            },
            1_000,
          ),
        ),
        (error: Error & { code?: string }) => error.code === 'ERR_STORE' && /sent nothing for 1 s/.test(error.message),
      );
      assert.ok(Date.now() - started < 10_000, `failed after ${Date.now() - started} ms`);
      const rows: Buffer[] = [];
      await withPoolClient(pool, through, (client) => readCopyOut(client, through, 'COPY (SELECT 42) TO STDOUT', (piece) => void rows.push(piece), 1_000));
      assert.equal(Buffer.concat(rows).toString(), '42\n');
    } finally {
      await pool.end().catch(() => {});
      await proxy.close();
    }
  }),
);

test('a listening connection that falls silent is found by its heartbeat and connected again', { timeout: 60_000 }, () =>
  withTestSchema(async (location) => {
    await migrate(location);
    const proxy = await silencingProxy(new URL(location.url));
    const through = proxy.url(location);
    let looks = 0;
    const notifications = new StoreNotifications(through, [`${location.schema}_evidence`], () => looks++, silentLogger, 600);
    try {
      await until('listening', 10_000, () => notifications.listening);
      const before = looks;
      proxy.silence();
      // Dropped within a heartbeat and its wait, then connected again through a new connection; the reconnection looks.
      await until('listening again on a new connection', 15_000, () => proxy.opened() >= 2 && notifications.listening && looks > before);
    } finally {
      await notifications.close();
      await proxy.close();
    }
  }),
);
