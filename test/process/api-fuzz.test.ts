import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import fc from 'fast-check';
import { tempDataDir, ingest, evidence } from '../helpers.js';
import { startServer, runCli, lastLine, type RunningServer } from '../server-process.js';

let server: RunningServer;
let key: string;
let cleanup: () => Promise<void>;
const EXPECTED = new Set([200, 400, 401, 404, 422, 503]);

before(async () => {
  const t = await tempDataDir();
  cleanup = t.cleanup;
  await ingest(t.dir, t.root, [evidence('a@ybl', 'https://u.example'), evidence('b@ybl', 'https://u.example')]);
  key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  server = await startServer(t.dir.root);
});

after(async () => {
  assert.equal(await server.stop(), 0);
  await cleanup();
});

async function assertHealthy(response: Response): Promise<void> {
  const text = await response.text();
  assert.ok(EXPECTED.has(response.status), `unexpected status ${response.status}: ${text}`);
  const body = JSON.parse(text) as { error?: string };
  if (response.status !== 200) assert.equal(typeof body.error, 'string');
}

const paths = fc.constantFrom('/v1/verify/upi', '/v1/verify/upi/batch', '/v1/verify/upi/cluster/', '/v1/cyber/check', '/v1/audit/app', '/v1/x', '/');

test('random query strings never cause a 500, a hang or a crash (property)', async () => {
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('%', '%zz', '%00', '%E2%82', '+', '&&=', 'upi')), fc.boolean(), async (value, encode) => {
      const query = encode ? encodeURIComponent(value) : value.replace(/[#\s]/g, '');
      const r = await fetch(`${server.base}/v1/verify/upi?upi=${query}`, { headers: { authorization: `Bearer ${key}` } }).catch(() => null);
      if (r !== null) await assertHealthy(r);
    }),
    { numRuns: 300 },
  );
});

test('random headers and bodies never cause a 500 (property)', async () => {
  await fc.assert(
    fc.asyncProperty(
      paths,
      fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'),
      fc.oneof(fc.constant(`Bearer ${key}`), fc.string(), fc.constant('Bearer'), fc.constant(`bearer   ${key}`)),
      fc.oneof(fc.constant('application/json'), fc.string(), fc.constant('application/json; charset=utf-8')),
      fc.oneof(
        fc.string(),
        fc.json(),
        fc.jsonValue().map((v) => JSON.stringify({ upis: v })),
        fc.array(fc.string(), { maxLength: 120 }).map((upis) => JSON.stringify({ upis })),
        fc.array(fc.constantFrom('a@ybl', 'B@YBL', 'x@okaxis', 'bad'), { maxLength: 110 }).map((vpas) => JSON.stringify({ vpas })),
      ),
      async (path, method, auth, contentType, body) => {
        const headers: Record<string, string> = {};
        if (/^[\x21-\x7e][\x20-\x7e]*$/.test(auth)) headers.authorization = auth;
        if (/^[\x21-\x7e][\x20-\x7e]*$/.test(contentType)) headers['content-type'] = contentType;
        const init: RequestInit = { method, headers };
        if (method !== 'GET') init.body = body;
        const r = await fetch(`${server.base}${path}`, init);
        await assertHealthy(r);
      },
    ),
    { numRuns: 300 },
  );
});

/** Raw bytes on a socket: whatever the server does, it must answer or close, and keep serving others. */
function rawExchange(bytes: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const port = Number(new URL(server.base).port);
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => socket.destroy(), 2000);
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('error', () => {});
    socket.end(bytes);
  });
}

test('malformed HTTP on the wire does not disturb the server (property)', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
        fc.string().map((s) => Buffer.from(`GET /v1/verify/upi?upi=${s} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`)),
        fc.nat({ max: 10_000_000 }).map((n) => Buffer.from(`POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${key}\r\nContent-Length: ${n}\r\n\r\n{"upis":[`)),
      ),
      async (bytes) => {
        const reply = await rawExchange(bytes);
        assert.equal(/^HTTP\/1\.1 5\d\d/m.test(reply), false, reply.slice(0, 200));
      },
    ),
    { numRuns: 150 },
  );
  const r = await fetch(`${server.base}/v1/verify/upi?upi=a@ybl`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(r.status, 200);
  assert.equal(((await r.json()) as { status: string }).status, 'FLAGGED');
});

test('a body that grows past the cap is refused without reading it all, and the server keeps serving', async () => {
  const big = Buffer.alloc(5 * 1024 * 1024, 0x20);
  const r = await fetch(`${server.base}/v1/verify/upi/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: big,
  }).catch((error: Error) => error);
  if (!(r instanceof Error)) {
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { error: string }).error, 'bad_request');
  }
  const ok = await fetch(`${server.base}/v1/verify/upi?upi=b@ybl`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(ok.status, 200);
});
