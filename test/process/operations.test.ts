import { describe, test } from 'node:test';
import { rm } from 'node:fs/promises';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { CLI, GENEROUS_PLANS, startServer, type RunningServer } from '../server-process.js';
import { createKey, edgeDataDir, eventually, request, writePlans, type EdgeDataDir } from '../fixtures/edge-server.js';
import { sample } from '../helpers.js';

// The operations surface: health and readiness, Prometheus metrics, JSON
// logs and graceful shutdown, against real server processes.

/** A server on a fresh data directory; `prepare` runs first (keys made there are in force from the start). */
async function withServer<T>(
  options: { args?: readonly string[]; prepare?: (data: EdgeDataDir) => Promise<T> },
  run: (server: RunningServer, prepared: T) => Promise<void>,
): Promise<void> {
  const data = await edgeDataDir();
  let server: RunningServer | undefined;
  try {
    const prepared = (await options.prepare?.(data)) as T;
    server = await startServer(data.dataDir, { args: options.args ?? [] });
    await run(server, prepared);
  } finally {
    if (server !== undefined) assert.equal(await server.stop(), 0, 'graceful exit');
    await data.cleanup();
  }
}

interface LogLine {
  readonly level: number;
  readonly time: number;
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** Standard error parsed as JSON lines; fails on any line that is not one. */
function logLines(server: RunningServer): LogLine[] {
  return server
    .stderr()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      assert.doesNotThrow(() => JSON.parse(line), `a JSON log line: ${line}`);
      return JSON.parse(line) as LogLine;
    });
}

// Every test has its own server, so they run side by side.
describe('operations', { concurrency: true }, () => {
  test('GET /healthz and /readyz answer 200 without a key and draw on no quota', async () => {
    const prepare = (data: EdgeDataDir) => createKey(data.dataDir, { limits: { burst: 100, sustained: 2, windowSeconds: 60 } });
    await withServer({ prepare }, async (server, key) => {
      const first = await request(server.base, '/v1/verify/upi?upi=payee@ybl', key);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.headers.get('x-ratelimit-remaining'), '1');

      for (let i = 0; i < 10; i++) {
        for (const [path, auth] of [
          ['/healthz', null],
          ['/readyz', null],
          ['/healthz', key],
          ['/readyz', key],
        ] as const) {
          const r = await request(server.base, path, auth);
          assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
        }
      }
      const health = await request(server.base, '/healthz', null);
      assert.deepEqual(health.body, { status: 'ok' });
      const ready = await request(server.base, '/readyz', null);
      assert.equal(ready.body.status, 'ready');
      assert.equal(ready.body.vpas, 40);
      assert.equal(ready.body.snapshot, ready.headers.get('x-data-version'));

      // After all those health checks the key still has its second request.
      const second = await request(server.base, '/v1/verify/upi?upi=payee@ybl', key);
      assert.equal(second.status, 200);
      assert.equal(second.headers.get('x-ratelimit-remaining'), '0');
      assert.equal((await request(server.base, '/v1/verify/upi?upi=payee@ybl', key)).status, 429);
    });
  });

  const METRIC_NAMES = [
    'upi_risk_http_requests_total',
    'upi_risk_http_request_duration_seconds',
    'upi_risk_rate_limit_rejections_total',
    'upi_risk_snapshot_vpas',
    'upi_risk_snapshot_bytes',
    'upi_risk_resident_bytes',
    'upi_risk_snapshot_age_seconds',
    'upi_risk_snapshot_info',
    'upi_risk_event_loop_delay_max_seconds',
    'upi_risk_snapshot_swap_seconds',
    'upi_risk_build_carried_bytes',
    'upi_risk_gc_pause_max_seconds',
    'upi_risk_heap_used_bytes',
  ];

  test('GET /metrics from loopback returns Prometheus text with the service metrics', async () => {
    const data = await edgeDataDir();
    const key = await createKey(data.dataDir, { limits: { burst: 100, sustained: 1, windowSeconds: 60 } });
    const plans = await writePlans(data.root, { plans: { default: { burst: 100, sustained: 100, windowSeconds: 60 } } });
    const server = await startServer(data.dataDir, { plans });
    try {
      const ok = await request(server.base, '/v1/verify/upi?upi=payee@ybl', key);
      assert.equal(ok.status, 200);
      assert.equal((await request(server.base, '/v1/verify/upi?upi=payee@ybl', key)).status, 429);

      const response = await fetch(`${server.base}/metrics`);
      const text = await response.text();
      assert.equal(response.status, 200, text);
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
      for (const name of METRIC_NAMES) assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} exported`);
      assert.equal(sample(text, 'upi_risk_http_requests_total{route="verify",status="200"}'), 1);
      assert.equal(sample(text, 'upi_risk_http_requests_total{route="verify",status="429"}'), 1);
      assert.equal(sample(text, 'upi_risk_http_request_duration_seconds_count{route="verify"}'), 2);
      assert.equal(sample(text, 'upi_risk_rate_limit_rejections_total{kind="key"}'), 1);
      assert.equal(sample(text, 'upi_risk_snapshot_vpas'), 40);
      // One copy of the snapshot, whatever the number of serving threads, inside the whole process's memory.
      const snapshotBytes = sample(text, 'upi_risk_snapshot_bytes')!;
      const resident = sample(text, 'upi_risk_resident_bytes')!;
      assert.ok(snapshotBytes > 40 * 8 && snapshotBytes < 1_000_000, `snapshot bytes ${snapshotBytes}`);
      assert.ok(resident > 20_000_000 && resident > snapshotBytes, `resident bytes ${resident}`);
      assert.equal(sample(text, `upi_risk_snapshot_info{id="${ok.headers.get('x-data-version')!}"}`), 1);
      const age = sample(text, 'upi_risk_snapshot_age_seconds');
      assert.ok(age !== undefined && age >= 0, 'snapshot age is a number of seconds');
      for (const thread of ['main', '0']) {
        const stall = sample(text, `upi_risk_event_loop_delay_max_seconds{thread="${thread}"}`);
        assert.ok(stall !== undefined && stall >= 0 && stall < 60, `longest event-loop delay of thread ${thread} is a number of seconds`);
        const heap = sample(text, `upi_risk_heap_used_bytes{thread="${thread}"}`);
        assert.ok(heap !== undefined && heap > 0, `heap in use of thread ${thread}`);
      }
      const swap = sample(text, 'upi_risk_snapshot_swap_seconds{thread="0"}');
      assert.ok(swap !== undefined && swap >= 0 && swap < 1, 'the first snapshot was wrapped in well under a second');
    } finally {
      assert.equal(await server.stop(), 0);
      await data.cleanup();
    }
  });

  test('with --metrics-token, /metrics needs "Authorization: Bearer <token>" and is 404 otherwise', async () => {
    const token = 'scrape-token-7f3a';
    const plans = await writePlans(tmpdir(), { plans: { default: { burst: 1000, sustained: 100_000, windowSeconds: 60 } }, authFailuresPerIp: { points: 10, windowSeconds: 60 } });
    try {
      await withServer({ args: ['--metrics-token', token, '--threads', '1', '--plans', plans] }, async (server) => {
        const scrape = async (authorization?: string) => {
          const r = await fetch(`${server.base}/metrics`, authorization === undefined ? {} : { headers: { authorization } });
          return { status: r.status, text: await r.text() };
        };
        const none = await scrape();
        assert.equal(none.status, 404, 'no token, even from loopback');
        assert.equal((JSON.parse(none.text) as { error: string }).error, 'not_found');
        assert.equal((await scrape('Bearer wrong-token')).status, 404);
        assert.equal((await scrape(`Basic ${token}`)).status, 404);
        const good = await scrape(`Bearer ${token}`);
        assert.equal(good.status, 200);
        assert.match(good.text, /^# TYPE upi_risk_http_requests_total counter$/m);
        // Tokens tried are charged to the IP like keys: past its failures, not even the right one is looked at.
        for (let i = 0; i < 10; i++) assert.equal((await scrape(`Bearer guess-${i}`)).status, 404);
        assert.equal((await scrape(`Bearer ${token}`)).status, 404, 'the right token, from an IP past its failures');
        assert.equal((await fetch(`${server.base}/v1/verify/upi?upi=a@ybl`, { headers: { authorization: 'Bearer another-guess' } })).status, 429, 'the same budget as keys');
      });
    } finally {
      await rm(plans, { force: true });
    }
  });

  /** A non-loopback IPv4 address of this machine, to reach a server listening on every address as a remote client would. */
  function externalIpv4(): string | undefined {
    return Object.values(networkInterfaces())
      .flat()
      .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
  }

  const hasIpv6Loopback = Object.values(networkInterfaces())
    .flat()
    .some((a) => a !== undefined && a.family === 'IPv6' && a.internal && a.address === '::1');

  test('without a token, /metrics answers loopback clients only, on IPv4 and on dual-stack listeners', async (t) => {
    const external = externalIpv4();
    const status = async (host: string, port: string) => {
      const r = await fetch(`http://${host}:${port}/metrics`);
      await r.arrayBuffer();
      return r.status;
    };
    await withServer({ args: ['--host', '0.0.0.0', '--threads', '1'] }, async (server) => {
      const port = new URL(server.base).port;
      assert.equal(await status('127.0.0.1', port), 200);
      if (external !== undefined) assert.equal(await status(external, port), 404, `from ${external}`);
      else t.diagnostic('no non-loopback IPv4 address: the remote case is not checked');
    });
    if (!hasIpv6Loopback) {
      t.diagnostic('no IPv6 loopback: the dual-stack case is not checked');
      return;
    }
    await withServer({ args: ['--host', '::', '--threads', '1'] }, async (server) => {
      const port = new URL(server.base).port;
      assert.match(server.output(), new RegExp(`listening on http://\\[::\\]:${port}\n`), 'the IPv6 address is bracketed in the URL');
      // IPv4 clients of a dual-stack listener arrive as IPv4-mapped IPv6 addresses.
      assert.equal(await status('127.0.0.1', port), 200, 'IPv4 loopback');
      assert.equal(await status('[::1]', port), 200, 'IPv6 loopback');
      if (external !== undefined) assert.equal(await status(external, port), 404, `from ${external}`);
    });
  });

  test('logs go to stderr as JSON lines, including a "listening" line', async () => {
    const data = await edgeDataDir();
    const server = await startServer(data.dataDir);
    const closed = once(server.child, 'close');
    try {
      const port = Number(new URL(server.base).port);
      await eventually(() => logLines(server).some((l) => l.msg === 'listening'), 'the listening log line');
      const listening = logLines(server).find((l) => l.msg === 'listening')!;
      assert.equal(listening.port, port);
      assert.equal(listening.host, '127.0.0.1');
      assert.equal(listening.tls, false);
      assert.equal(listening.level, 30);
      assert.equal(typeof listening.time, 'number');
    } finally {
      assert.equal(await server.stop(), 0);
      await closed;
      await data.cleanup();
    }
    // Every line, up to the last one written while stopping, is a JSON object with a level, time and message.
    const lines = logLines(server);
    for (const line of lines) {
      assert.equal(typeof line.level, 'number');
      assert.equal(typeof line.time, 'number');
      assert.equal(typeof line.msg, 'string');
    }
    assert.ok(lines.some((l) => l.msg === 'stopped'), 'a line for the stop');
  });

  test('SIGTERM still stops the server with exit code 0 after its log reader has gone away', async () => {
    const data = await edgeDataDir();
    const server = await startServer(data.dataDir);
    try {
      // Whoever read the logs is gone: every later log write fails with EPIPE.
      server.child.stdout!.destroy();
      server.child.stderr!.destroy();
      const health = await fetch(`${server.base}/healthz`);
      assert.equal(health.status, 200);
      await health.arrayBuffer();
      const exited = once(server.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      server.child.kill('SIGTERM');
      const [code, signal] = await exited;
      assert.equal(signal, null);
      assert.equal(code, 0);
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
      await data.cleanup();
    }
  });

  test('a server whose standard output has no reader from the start serves, and SIGTERM stops it with exit code 0', async () => {
    const data = await edgeDataDir();
    const child = spawn(process.execPath, [CLI, 'serve', '--data-dir', data.dataDir, '--port', '0', '--plain-http', '--plans', GENEROUS_PLANS], { stdio: ['ignore', 'pipe', 'pipe'] });
    // Gone before the server writes its "listening on" line: that write fails with EPIPE.
    child.stdout!.destroy();
    try {
      let log = '';
      child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
      const listening = () => log.split('\n').find((l) => l.includes('"msg":"listening"'));
      await eventually(() => listening() !== undefined, 'the server listens', 60_000);
      const { port } = JSON.parse(listening()!) as { port: number };
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(health.status, 200);
      await health.arrayBuffer();
      const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      child.kill('SIGTERM');
      assert.deepEqual(await exited, [0, null]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await data.cleanup();
    }
  });

  // Both ways of serving: a pool of serving threads (the default on several cores) and one thread.
  for (const [mode, args] of [['serving threads', ['--threads', '2']], ['one thread', ['--threads', '1']]] as const) {
    test(`graceful shutdown (${mode}): a request in flight at SIGTERM is answered, new connections are refused, exit code 0`, async () => {
      const data = await edgeDataDir();
      const key = await createKey(data.dataDir);
      const server = await startServer(data.dataDir, { args });
      const exited = once(server.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      try {
        const port = Number(new URL(server.base).port);
        const body = JSON.stringify({ upis: ['payee@ybl', 'other@okaxis'] });
        const socket = net.connect(port, '127.0.0.1');
        await once(socket, 'connect');
        let received = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => (received += chunk));
        const socketClosed = once(socket, 'close');

        // Headers only. "Expect: 100-continue" makes the server say when it has taken the request up.
        socket.write(
          `POST /v1/verify/upi/batch HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
        );
        await eventually(() => received.startsWith('HTTP/1.1 100 Continue\r\n\r\n'), 'the server reads the request headers');

        server.child.kill('SIGTERM');
        await eventually(() => logLines(server).some((l) => /^shutting down/.test(l.msg)), 'the shutdown log line');
        assert.equal(logLines(server).find((l) => /^shutting down/.test(l.msg))!.signal, 'SIGTERM');
        assert.equal(server.child.exitCode, null, 'still running while a request is in flight');

        // The listening socket closes: new connections are refused while the batch is still open.
        let refused = false;
        for (let attempt = 0; !refused; attempt++) {
          assert.ok(attempt < 500, 'new connections are refused after SIGTERM');
          refused = await new Promise<boolean>((resolve) => {
            const late = net.connect(port, '127.0.0.1', () => {
              late.destroy();
              resolve(false);
            });
            late.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
          });
          if (!refused) await new Promise((r) => setTimeout(r, 10));
        }
        assert.equal(server.child.exitCode, null, 'still running: the batch has not been answered yet');

        socket.write(body);
        await socketClosed;
        const [head, payload] = received.slice('HTTP/1.1 100 Continue\r\n\r\n'.length).split('\r\n\r\n');
        assert.match(head!, /^HTTP\/1\.1 200 OK\r\n/);
        assert.match(head!, /\r\nConnection: close\r\n/i, 'the connection is closed after the answer');
        const answer = JSON.parse(payload!) as { total: number; results: { upi: string }[] };
        assert.equal(answer.total, 2);
        assert.deepEqual(answer.results.map((r) => r.upi), ['payee@ybl', 'other@okaxis']);

        const [code, signal] = await exited;
        assert.equal(signal, null);
        assert.equal(code, 0);
      } finally {
        await server.stop();
        await data.cleanup();
      }
    });
  }
});
