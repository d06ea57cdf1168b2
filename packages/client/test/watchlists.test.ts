import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NotFoundError, ResponseFormatError } from '../src/errors.js';
import { cleared, itemOf, scriptedClient, type Reply, type SentRequest } from './fakes.js';

const watchlist = { id: 'wl_1', name: 'merchants', webhook_url: 'https://hooks.example/upi', filters: { statuses: ['FLAGGED'] }, created_at: '2027-01-15T08:00:00.000Z', vpa_count: 2 };

const call = (r: SentRequest) => `${r.method} ${r.url.pathname}${r.url.search}`;

test('watchlist management: methods, paths and bodies of docs/watchlists.md', async () => {
  const { client, requests } = scriptedClient((request) => {
    const route = `${request.method} ${request.url.pathname}`;
    switch (route) {
      case 'POST /v1/watchlists':
        return { status: 201, body: { ...watchlist, vpa_count: undefined, secret: 'whsec_a' } };
      case 'GET /v1/watchlists':
        return { status: 200, body: { watchlists: [watchlist] } };
      case 'GET /v1/watchlists/wl_1':
        return { status: 200, body: watchlist };
      case 'DELETE /v1/watchlists/wl_1':
        return { status: 200, body: { deleted: true } };
      case 'POST /v1/watchlists/wl_1/secret':
        return { status: 200, body: { secret: 'whsec_b' } };
      case 'POST /v1/watchlists/wl_1/events/evt_9/redeliver':
        return { status: 202, body: { event: { id: 'evt_9' } } };
      default:
        return { status: 404, body: { error: 'not_found', message: route } };
    }
  });
  const created = await client.createWatchlist({ name: 'merchants', webhook_url: 'https://hooks.example/upi', filters: { statuses: ['FLAGGED'] } });
  assert.equal(created.secret, 'whsec_a');
  assert.deepEqual(requests[0]!.body, { name: 'merchants', webhook_url: 'https://hooks.example/upi', filters: { statuses: ['FLAGGED'] } });
  assert.equal(requests[0]!.headers['content-type'], 'application/json');
  assert.deepEqual(await client.listWatchlists(), [watchlist]);
  assert.deepEqual(await client.getWatchlist('wl_1'), watchlist);
  assert.deepEqual(await client.rotateWatchlistSecret('wl_1'), { secret: 'whsec_b' });
  assert.deepEqual(await client.redeliverEvent('wl_1', 'evt_9'), { event: { id: 'evt_9' } });
  assert.deepEqual(await client.deleteWatchlist('wl_1'), { deleted: true });
  await assert.rejects(client.getWatchlist('wl/../2'), NotFoundError);
  // Bad arguments reject (never throw), and send nothing.
  const sent = requests.length;
  for (const badCall of [() => client.getWatchlist(''), () => client.deleteWatchlist(''), () => client.rotateWatchlistSecret(''), () => client.redeliverEvent('wl_1', '')]) {
    await assert.rejects(badCall(), TypeError);
  }
  await assert.rejects(client.verify(''), TypeError);
  await assert.rejects(client.cluster(undefined as unknown as string), TypeError);
  assert.equal(requests.length, sent);
  assert.deepEqual(requests.map(call), [
    'POST /v1/watchlists',
    'GET /v1/watchlists',
    'GET /v1/watchlists/wl_1',
    'POST /v1/watchlists/wl_1/secret',
    'POST /v1/watchlists/wl_1/events/evt_9/redeliver',
    'DELETE /v1/watchlists/wl_1',
    // Ids are path segments, encoded: they cannot reach another route.
    'GET /v1/watchlists/wl%2F..%2F2',
  ]);
  assert.ok(requests.slice(1).every((r) => r.body === undefined && r.headers['content-type'] === undefined));
  // A rotation that keeps the previous secret says for how long, in its body.
  await client.rotateWatchlistSecret('wl_1', { keepPreviousSeconds: 3600 });
  assert.deepEqual([call(requests.at(-1)!), requests.at(-1)!.body], ['POST /v1/watchlists/wl_1/secret', { keep_previous_seconds: 3600 }]);
});

test('adding and removing VPAs: PUT and DELETE with {"upis"}, 1,000 a request, counts summed', async () => {
  let size = 0;
  const { client, requests } = scriptedClient((request) => {
    const upis = (request.body as { upis: string[] }).upis;
    if (request.method === 'PUT') {
      size += upis.length;
      return { status: 200, body: { added: upis.length, total: size } };
    }
    size -= upis.length;
    return { status: 200, body: { removed: upis.length, total: size } };
  });
  const upis = Array.from({ length: 2500 }, (_, i) => `m${i}@okaxis`);
  assert.deepEqual(await client.addToWatchlist('wl_1', upis), { added: 2500, total: 2500 });
  assert.deepEqual(await client.removeFromWatchlist('wl_1', upis.slice(0, 10)), { removed: 10, total: 2490 });
  assert.deepEqual(requests.map((r) => `${call(r)} ${(r.body as { upis: string[] }).upis.length}`), [
    'PUT /v1/watchlists/wl_1/vpas 1000',
    'PUT /v1/watchlists/wl_1/vpas 1000',
    'PUT /v1/watchlists/wl_1/vpas 500',
    'DELETE /v1/watchlists/wl_1/vpas 10',
  ]);
  assert.deepEqual(requests.flatMap((r) => (r.body as { upis: string[] }).upis).slice(0, 2500), upis);
  await assert.rejects(client.addToWatchlist('wl_1', []), RangeError);
});

test('answers without what the calls return are ResponseFormatErrors, never undefined or NaN', async () => {
  const { client } = scriptedClient((request) => {
    if (request.method === 'GET') return { status: 200, body: { lists: [] } };
    const upis = (request.body as { upis: string[] }).upis;
    if (upis[0] === 'no-count@ybl') return { status: 200, body: { total: 3 } };
    if (upis[0] === 'no-total@ybl') return { status: 200, body: { added: 1, removed: 1 } };
    return { status: 200, body: { added: '1', removed: null, total: 3 } };
  });
  await assert.rejects(client.listWatchlists(), (e) => e instanceof ResponseFormatError && /watchlists array/.test(e.message));
  for (const upi of ['no-count@ybl', 'no-total@ybl', 'wrong-type@ybl']) {
    await assert.rejects(client.addToWatchlist('wl_1', [upi]), ResponseFormatError, upi);
    await assert.rejects(client.removeFromWatchlist('wl_1', [upi]), ResponseFormatError, upi);
  }
});

/** A listing of `count` VPAs served `limit` at a time, the cursor being the next index. */
function pagedVpas(count: number) {
  return (request: SentRequest): Reply => {
    const limit = Number(request.url.searchParams.get('limit') ?? 100);
    const from = Number(request.url.searchParams.get('cursor') ?? 0);
    const vpas = Array.from({ length: Math.max(0, Math.min(limit, count - from)) }, (_, i) => itemOf(cleared(`m${from + i}@okaxis`)));
    return { status: 200, body: { vpas, next_cursor: from + limit < count ? String(from + limit) : null } };
  };
}

test('listWatchlistVpas awaited is one page; iterated, every page from the cursor on', async () => {
  const { client, requests } = scriptedClient(pagedVpas(250));
  const first = await client.listWatchlistVpas('wl_1', { limit: 100 });
  assert.equal(first.vpas.length, 100);
  assert.equal(first.next_cursor, '100');
  assert.deepEqual(requests.map(call), ['GET /v1/watchlists/wl_1/vpas?limit=100']);

  const pages = [];
  for await (const page of client.listWatchlistVpas('wl_1', { limit: 100 })) pages.push(page);
  assert.deepEqual(pages.map((p) => p.vpas.length), [100, 100, 50]);
  assert.deepEqual(pages.flatMap((p) => p.vpas.map((v) => v.upi)), Array.from({ length: 250 }, (_, i) => `m${i}@okaxis`));
  assert.deepEqual(requests.slice(1).map(call), [
    'GET /v1/watchlists/wl_1/vpas?limit=100',
    'GET /v1/watchlists/wl_1/vpas?limit=100&cursor=100',
    'GET /v1/watchlists/wl_1/vpas?limit=100&cursor=200',
  ]);

  const from = [];
  for await (const page of client.listWatchlistVpas('wl_1', { cursor: '200' })) from.push(page.vpas.length);
  assert.deepEqual(from, [50]);
  // Bad arguments reject, as every call's do; nothing is sent.
  const sent = requests.length;
  await assert.rejects(async () => await client.listWatchlistVpas('wl_1', { limit: 0 }), RangeError);
  await assert.rejects(async () => await client.listWatchlistVpas(''), TypeError);
  assert.equal(requests.length, sent);
});

test('listWatchlistEvents pages the same way; a cursor that does not move is refused', async () => {
  const delivery = { state: 'delivered', attempts: [{ at: '2027-01-15T08:00:01.000Z', status: 200, error: null, duration_ms: 41 }], next_attempt_at: null };
  const { client, requests } = scriptedClient((request) => {
    const cursor = request.url.searchParams.get('cursor');
    if (cursor === null) return { status: 200, body: { events: [{ id: 'evt_2', delivery }], next_cursor: 'c1' } };
    if (cursor === 'c1') return { status: 200, body: { events: [{ id: 'evt_1', delivery }], next_cursor: null } };
    return { status: 200, body: { events: [], next_cursor: 'stuck' } };
  });
  const ids = [];
  for await (const page of client.listWatchlistEvents('wl_1', { limit: 1 })) ids.push(...page.events.map((e) => e.id));
  assert.deepEqual(ids, ['evt_2', 'evt_1']);
  assert.deepEqual(requests.map(call), ['GET /v1/watchlists/wl_1/events?limit=1', 'GET /v1/watchlists/wl_1/events?limit=1&cursor=c1']);
  await assert.rejects(async () => {
    for await (const _ of client.listWatchlistEvents('wl_1', { cursor: 'stuck' }));
  }, /pointed back to itself/);
});
