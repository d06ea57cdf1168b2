import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../server-process.js';
import { createKey, createKeyWithCli, edgeDataDir, request, sleep, writePlans, type EdgeDataDir, type PlansFile, type Reply } from '../fixtures/edge-server.js';

// Rate limits against real server processes with the in-memory back-end.
// One server holds a key per scenario, each with limits small enough to
// count exactly (keys carry their own limits or name a plan of the plans
// file); the scenarios run concurrently since keys never share a quota.
// Failed authentications are counted per IP, so that scenario has a server
// of its own. Only tests that prove Retry-After honest wait for a window.

const VERIFY = '/v1/verify/upi?upi=payee@ybl';
const BIG = 1_000_000;

interface Shared {
  readonly server: RunningServer;
  readonly keys: Record<string, string>;
}

/** Keys are created before the server starts, so they are in force from its first request. */
async function serverWithKeys(
  data: EdgeDataDir,
  plans: PlansFile,
  makeKeys: (dataDir: string) => Promise<Record<string, string>>,
  args: readonly string[],
): Promise<Shared> {
  const keys = await makeKeys(data.dataDir);
  const server = await startServer(data.dataDir, { plans: await writePlans(data.root, plans), args });
  return { server, keys };
}

const get = (server: RunningServer, key: string | null, path = VERIFY) => request(server.base, path, key);
const post = (server: RunningServer, key: string | null, path: string, body: unknown) =>
  request(server.base, path, key, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

function header(r: Reply, name: string): number {
  const value = r.headers.get(name);
  assert.match(value ?? '', /^\d+$/, `${name} is a whole number (status ${r.status})`);
  return Number(value);
}

function assertAllowed(r: Reply, limit: number, remaining: number, what = ''): void {
  assert.equal(r.status, 200, `${what} ${JSON.stringify(r.body)}`);
  assert.equal(header(r, 'x-ratelimit-limit'), limit, `${what} X-RateLimit-Limit`);
  assert.equal(header(r, 'x-ratelimit-remaining'), remaining, `${what} X-RateLimit-Remaining`);
}

/** A 429 as the spec has it; returns the seconds to wait. */
function assertLimited(r: Reply, maxSeconds: number, what = ''): number {
  assert.equal(r.status, 429, `${what} ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error, 'rate_limit_exceeded');
  assert.equal(typeof r.body.message, 'string');
  const retryAfter = r.body.retry_after;
  assert.ok(Number.isInteger(retryAfter) && (retryAfter as number) >= 1, `retry_after ${String(retryAfter)} is an integer >= 1`);
  assert.equal(header(r, 'retry-after'), retryAfter, 'Retry-After header equals retry_after');
  assert.ok((retryAfter as number) <= maxSeconds, `retry_after ${String(retryAfter)} <= ${maxSeconds}`);
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) header(r, name);
  return retryAfter as number;
}

describe('quotas per key', { concurrency: true }, () => {
  let data: EdgeDataDir;
  let shared: Shared;
  const plans: PlansFile = {
    plans: {
      default: { burst: BIG, sustained: 1000, windowSeconds: 60 },
      tiny: { burst: BIG, sustained: 2, windowSeconds: 60 },
    },
  };

  before(async () => {
    data = await edgeDataDir();
    shared = await serverWithKeys(data, plans, async (dataDir) => {
      const limited = (burst: number, sustained: number, windowSeconds: number) => createKey(dataDir, { limits: { burst, sustained, windowSeconds } });
      return {
        burst: await limited(3, BIG, 60),
        both: await limited(2, 2, 3),
        sustained: await limited(BIG, 3, 2),
        a: await limited(BIG, 2, 60),
        b: await limited(BIG, 2, 60),
        endpoints: await limited(BIG, 6, 60),
        cliCustom: await createKeyWithCli(dataDir, '--burst', '2', '--sustained', '3', '--window', '60'),
        cliPlan: await createKeyWithCli(dataDir, '--plan', 'tiny'),
        plain: await createKey(dataDir),
        every: await createKey(dataDir),
      };
      // Several serving threads: every thread must draw on the one quota of a key.
    }, ['--threads', '2']);
  });

  after(async () => {
    assert.equal(await shared.server.stop(), 0, 'graceful exit');
    await data.cleanup();
  });

  test('burst: exactly N requests in quick succession pass, the next is 429, and Retry-After is honest', async () => {
    const { server, keys } = shared;
    for (let i = 0; i < 3; i++) assertAllowed(await get(server, keys.burst!), BIG, BIG - 1 - i, `request ${i + 1}`);
    const wait = assertLimited(await get(server, keys.burst!), 1, 'request 4');
    await sleep(wait * 1000);
    assertAllowed(await get(server, keys.burst!), BIG, BIG - 4, 'retry after Retry-After');
  });

  test('burst refused while the sustained window is spent as well: Retry-After waits for both', async () => {
    const { server, keys } = shared;
    assertAllowed(await get(server, keys.both!), 2, 1);
    assertAllowed(await get(server, keys.both!), 2, 0);
    // Over both limits at once: retrying when the burst window reopens would be refused again.
    const wait = assertLimited(await get(server, keys.both!), 3);
    await sleep(wait * 1000);
    assertAllowed(await get(server, keys.both!), 2, 1, 'retry after Retry-After');
  });

  test('sustained: M requests per window, X-RateLimit-* count down, then 429 until the window resets', async () => {
    const { server, keys } = shared;
    const window = 2;
    for (let i = 0; i < 3; i++) {
      const before = Math.floor(Date.now() / 1000);
      const r = await get(server, keys.sustained!);
      const after = Date.now() / 1000;
      assertAllowed(r, 3, 2 - i, `request ${i + 1}`);
      const reset = header(r, 'x-ratelimit-reset');
      assert.ok(reset >= before, `X-RateLimit-Reset ${reset} is not earlier than now (${before})`);
      assert.ok(reset <= after + window + 1, `X-RateLimit-Reset ${reset} is within the window (${after} + ${window} + 1)`);
    }
    const limited = await get(server, keys.sustained!);
    const wait = assertLimited(limited, window, 'request 4');
    assert.equal(header(limited, 'x-ratelimit-limit'), 3);
    assert.equal(header(limited, 'x-ratelimit-remaining'), 0);
    await sleep(wait * 1000);
    assertAllowed(await get(server, keys.sustained!), 3, 2, 'first request of the next window');
  });

  test('per key: each key has its own quota', async () => {
    const { server, keys } = shared;
    assertAllowed(await get(server, keys.a!), 2, 1, 'a1');
    assertAllowed(await get(server, keys.a!), 2, 0, 'a2');
    assertLimited(await get(server, keys.a!), 60, 'a3');
    assertAllowed(await get(server, keys.b!), 2, 1, 'b1');
    assertAllowed(await get(server, keys.b!), 2, 0, 'b2');
    assertLimited(await get(server, keys.b!), 60, 'b3');
  });

  test('per key: a batch counts as one request and every endpoint draws on the same quota', async () => {
    const { server } = shared;
    const key = shared.keys.endpoints!;
    const hundred = Array.from({ length: 100 }, (_, i) => `payee${i}@ybl`);
    const batch = await post(server, key, '/v1/verify/upi/batch', { upis: hundred });
    assertAllowed(batch, 6, 5, 'batch of 100');
    assert.equal(batch.body.total, 100);
    assertAllowed(await get(server, key), 6, 4, 'single');
    const cluster = await get(server, key, '/v1/verify/upi/cluster/MC-999999');
    assert.equal(cluster.status, 404);
    assert.equal(header(cluster, 'x-ratelimit-remaining'), 3, 'cluster lookup');
    const cyber = await get(server, key, '/v1/cyber/check?entity=example.com');
    assert.equal(cyber.status, 503);
    assert.equal(header(cyber, 'x-ratelimit-remaining'), 2, 'planned entity check');
    const audit = await post(server, key, '/v1/audit/app', { package_id: 'com.example.app', platform: 'android' });
    assert.equal(audit.status, 503);
    assert.equal(header(audit, 'x-ratelimit-remaining'), 1, 'planned app audit');
    assertAllowed(await post(server, key, '/v1/verify/upi/batch', { upis: ['one@ybl'] }), 6, 0, 'batch of 1');
    // The quota is spent, whatever the endpoint.
    assertLimited(await get(server, key), 60, 'single');
    assertLimited(await post(server, key, '/v1/verify/upi/batch', { upis: ['one@ybl'] }), 60, 'batch');
    assertLimited(await get(server, key, '/v1/verify/upi/cluster/MC-1'), 60, 'cluster');
    assertLimited(await get(server, key, '/v1/cyber/check?entity=example.com'), 60, 'entity check');
    assertLimited(await post(server, key, '/v1/audit/app', { package_id: 'com.example.app', platform: 'android' }), 60, 'app audit');
  });

  test('custom limits: keys create --burst/--sustained/--window overrides the plan, --plan picks a plan from the plans file', async () => {
    const { server, keys } = shared;
    // --burst 2 --sustained 3 --window 60.
    assertAllowed(await get(server, keys.cliCustom!), 3, 2, 'custom 1');
    assertAllowed(await get(server, keys.cliCustom!), 3, 1, 'custom 2');
    const wait = assertLimited(await get(server, keys.cliCustom!), 1, 'custom 3 (burst)');
    await sleep(wait * 1000);
    assertAllowed(await get(server, keys.cliCustom!), 3, 0, 'custom 3 after the burst window');
    const long = assertLimited(await get(server, keys.cliCustom!), 60, 'custom 4 (sustained)');
    assert.ok(long > 1, `the sustained window has most of its 60 s to run, retry_after ${long}`);

    // --plan tiny: 2 per 60 s.
    assertAllowed(await get(server, keys.cliPlan!), 2, 1, 'tiny 1');
    assertAllowed(await get(server, keys.cliPlan!), 2, 0, 'tiny 2');
    assertLimited(await get(server, keys.cliPlan!), 60, 'tiny 3');

    // Neither: the default plan.
    assertAllowed(await get(server, keys.plain!), 1000, 999, 'default plan');
  });

  test('every response carries X-RateLimit-Limit, -Remaining and -Reset', async () => {
    const { server } = shared;
    const key = shared.keys.every!;
    const json = { 'content-type': 'application/json' };
    const cases: [string, number, () => Promise<Reply>][] = [
      ['single lookup', 200, () => get(server, key)],
      ['single lookup without upi', 400, () => get(server, key, '/v1/verify/upi')],
      ['no key', 401, () => get(server, null)],
      ['batch', 200, () => post(server, key, '/v1/verify/upi/batch', { upis: ['a@ybl'] })],
      ['batch over 100', 400, () => post(server, key, '/v1/verify/upi/batch', { upis: Array.from({ length: 101 }, () => 'a@ybl') })],
      ['batch of the wrong shape', 422, () => post(server, key, '/v1/verify/upi/batch', { upis: 'a@ybl' })],
      ['batch without a key', 401, () => request(server.base, '/v1/verify/upi/batch', null, { method: 'POST', headers: json, body: '{}' })],
      ['unknown cluster', 404, () => get(server, key, '/v1/verify/upi/cluster/MC-999999')],
      ['malformed cluster id', 400, () => get(server, key, '/v1/verify/upi/cluster/gang')],
      ['planned entity check', 503, () => get(server, key, '/v1/cyber/check?entity=example.com')],
      ['planned app audit', 503, () => post(server, key, '/v1/audit/app', { package_id: 'a.b', platform: 'android' })],
      ['unknown path', 404, () => get(server, key, '/v2/verify/upi')],
      ['unknown path without a key', 404, () => get(server, null, '/nowhere')],
      ['unknown method', 404, () => request(server.base, VERIFY, key, { method: 'DELETE' })],
      ['OpenAPI document', 200, () => get(server, null, '/v1/openapi.json')],
    ];
    for (const [what, status, send] of cases) {
      const r = await send();
      assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body).slice(0, 200)}`);
      for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
        assert.match(r.headers.get(name) ?? '', /^\d+$/, `${what}: ${name}`);
      }
    }
  });
});

test('failed authentication is limited per IP: 401 with the per-IP limit, then 429; a valid key still passes', async () => {
  const plans: PlansFile = {
    plans: { default: { burst: BIG, sustained: 50, windowSeconds: 60 } },
    authFailuresPerIp: { points: 3, windowSeconds: 60 },
  };
  const data = await edgeDataDir();
  let own: Shared | undefined;
  try {
    own = await serverWithKeys(data, plans, async (dataDir) => ({ valid: await createKey(dataDir) }), ['--threads', '1']);
    const { server } = own;
    const key = own.keys.valid!;
    const attempts = [
      () => get(server, null),
      () => request(server.base, VERIFY, null, { headers: { authorization: `Basic ${key}` } }),
      () => get(server, 'upirisk_not-a-real-key'),
    ];
    for (const [i, attempt] of attempts.entries()) {
      const r = await attempt();
      assert.equal(r.status, 401, JSON.stringify(r.body));
      assert.equal(r.body.error, 'unauthorized');
      assert.equal(r.headers.get('www-authenticate'), 'Bearer');
      assert.equal(header(r, 'x-ratelimit-limit'), 3, `failure ${i + 1}: the per-IP limit`);
      assert.equal(header(r, 'x-ratelimit-remaining'), 2 - i, `failure ${i + 1}`);
      header(r, 'x-ratelimit-reset');
    }
    assertLimited(await get(server, 'upirisk_another-bad-key'), 60, 'fourth failure');
    assertLimited(await post(server, 'upirisk_another-bad-key', '/v1/verify/upi/batch', { upis: ['a@ybl'] }), 60, 'fifth failure, batch');
    // A console session cookie of the right form is refused too, before it is looked up.
    assertLimited(await request(server.base, VERIFY, null, { headers: { cookie: `__Host-upi_risk_session=${'A'.repeat(43)}` } }), 60, 'a session cookie');
    assertAllowed(await get(server, key), 50, 49, 'a valid key from the same IP');
  } finally {
    if (own !== undefined) assert.equal(await own.server.stop(), 0, 'graceful exit');
    await data.cleanup();
  }
});
