/**
 * The built @upi-risk/client's watchlist calls against a real `upi-risk
 * serve` process, and verifyWebhook on the deliveries it signs: the
 * merchant-onboarding flow of docs/client.md, end to end.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { NotFoundError, UpiRiskClient, ValidationError, WebhookSignatureError, verifyWebhook, type WatchedVpasPage } from '@upi-risk/client';
import { evidence, ingest, ndjson, tempDataDir, until } from '../helpers.js';
import { lastLine, runCli, startServer, type RunningServer } from '../server-process.js';
import { startReceiver, type Receiver } from '../webhook-receiver.js';

let server: RunningServer;
let receiver: Receiver;
let client: UpiRiskClient;
let stranger: UpiRiskClient;
let ingestKey: string;
let cleanup: () => Promise<void>;

before(async () => {
  const t = await tempDataDir();
  cleanup = t.cleanup;
  await ingest(t.dir, t.root, [evidence('known@ybl', 'https://t.me/known', { source_category: 'telegram', risk_category: 'mule' })]);
  const key = async (name: string, scopes: string) =>
    lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root, '--name', name, '--scopes', scopes])).stdout);
  // Every key before the server starts: one made later takes a moment to be seen.
  ingestKey = await key('intelligence', 'ingest');
  const acquirer = await key('acquirer', 'screen');
  const anotherBank = await key('another bank', 'screen');
  receiver = await startReceiver();
  server = await startServer(t.dir.root, { args: ['--webhook-allow', '127.0.0.1', '--webhook-first-retry-seconds', '1'] });
  client = new UpiRiskClient({ baseUrl: server.base, apiKey: acquirer });
  stranger = new UpiRiskClient({ baseUrl: server.base, apiKey: anotherBank });
});

after(async () => {
  await server.stop();
  await receiver.close();
  await cleanup();
});

async function sendEvidence(upi: string): Promise<void> {
  const response = await fetch(`${server.base}/v1/admin/evidence`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ingestKey}`, 'content-type': 'application/x-ndjson' },
    body: ndjson([evidence(upi, `https://pay.example/${upi}`, { risk_category: 'gambling' })]),
  });
  assert.equal(response.status, 200, await response.text());
}

test('a watchlist from creation to deletion, its events verified as a receiver would', async () => {
  const created = await client.createWatchlist({ name: 'settlement VPAs', webhook_url: receiver.url, filters: { statuses: ['FLAGGED'] } });
  assert.match(created.id, /^wl_/);
  assert.ok(created.secret.length > 0);
  assert.deepEqual(created.filters, { statuses: ['FLAGGED'] });

  // 1,500 VPAs: two requests of the client, one watchlist on the server.
  const merchants = Array.from({ length: 1499 }, (_, i) => `merchant${String(i).padStart(4, '0')}@okaxis`);
  assert.deepEqual(await client.addToWatchlist(created.id, [...merchants, 'flip@ybl']), { added: 1500, total: 1500 });
  assert.equal((await client.getWatchlist(created.id)).vpa_count, 1500);
  assert.deepEqual((await client.listWatchlists()).map((w) => w.id), [created.id]);
  assert.deepEqual(await stranger.listWatchlists(), []);
  await assert.rejects(stranger.getWatchlist(created.id), NotFoundError);

  const pages: WatchedVpasPage[] = [];
  for await (const page of client.listWatchlistVpas(created.id, { limit: 1000 })) pages.push(page);
  assert.deepEqual(pages.map((p) => p.vpas.length), [1000, 500]);
  const upis = pages.flatMap((p) => p.vpas.map((v) => v.upi));
  assert.deepEqual(upis, [...merchants, 'flip@ybl'].sort());
  assert.ok(pages.flatMap((p) => p.vpas).every((v) => v.status === 'CLEARED'));

  await sendEvidence('flip@ybl');
  await until('the event arrives', 5_000, () => receiver.received.length === 1);
  const delivery = receiver.received[0]!;
  const header = String(delivery.headers['upi-risk-signature']);
  const event = await verifyWebhook(delivery.body, header, created.secret);
  assert.equal(event.upi, 'flip@ybl');
  assert.equal(event.watchlist_id, created.id);
  assert.equal(event.before.status, 'CLEARED');
  assert.equal(event.after.status, 'FLAGGED');
  await assert.rejects(verifyWebhook(delivery.body.replace('FLAGGED', 'CLEARED'), header, created.secret), WebhookSignatureError);

  const [listed] = (await client.listWatchlistEvents(created.id)).events;
  assert.equal(listed!.id, event.id);

  // After a rotation, deliveries verify under the new secret only.
  const { secret } = await client.rotateWatchlistSecret(created.id);
  assert.notEqual(secret, created.secret);
  assert.equal((await client.redeliverEvent(created.id, event.id)).event.id, event.id);
  await until('the event arrives again', 5_000, () => receiver.received.length === 2);
  const again = receiver.received[1]!;
  const againHeader = String(again.headers['upi-risk-signature']);
  assert.equal((await verifyWebhook(again.body, againHeader, secret)).id, event.id);
  await assert.rejects(verifyWebhook(again.body, againHeader, created.secret), (e) => e instanceof WebhookSignatureError && e.reason === 'no_matching_signature');

  // A rotation that keeps the previous secret for an hour: each delivery verifies under either.
  const rotatedAt = Date.now();
  const kept = await client.rotateWatchlistSecret(created.id, { keepPreviousSeconds: 3600 });
  const expires = Date.parse(kept.previous_secret_expires_at!);
  assert.ok(expires >= rotatedAt + 3_600_000 && expires <= Date.now() + 3_600_000, kept.previous_secret_expires_at!);
  await client.redeliverEvent(created.id, event.id);
  await until('the event arrives a third time', 5_000, () => receiver.received.length === 3);
  const third = receiver.received[2]!;
  const thirdHeader = String(third.headers['upi-risk-signature']);
  assert.equal(thirdHeader.split(',v1=').length, 3, 'two signatures');
  assert.equal((await verifyWebhook(third.body, thirdHeader, kept.secret)).id, event.id);
  assert.equal((await verifyWebhook(third.body, thirdHeader, secret)).id, event.id, 'the previous secret still verifies');
  await assert.rejects(verifyWebhook(third.body, thirdHeader, created.secret), WebhookSignatureError, 'the one before it does not');
  for (const keepPreviousSeconds of [-1, 86_401, 1.5]) {
    await assert.rejects(client.rotateWatchlistSecret(created.id, { keepPreviousSeconds }), (e) => e instanceof ValidationError, String(keepPreviousSeconds));
  }
  // Rotated again without keeping: the secret it replaces signs nothing more, nor does the one kept before.
  const plain = await client.rotateWatchlistSecret(created.id);
  assert.equal(plain.previous_secret_expires_at, null);
  await client.redeliverEvent(created.id, event.id);
  await until('the event arrives a fourth time', 5_000, () => receiver.received.length === 4);
  const fourthHeader = String(receiver.received[3]!.headers['upi-risk-signature']);
  assert.equal(fourthHeader.split(',v1=').length, 2, 'one signature');
  assert.equal((await verifyWebhook(receiver.received[3]!.body, fourthHeader, plain.secret)).id, event.id);

  assert.deepEqual(await client.removeFromWatchlist(created.id, ['flip@ybl', 'never.watched@ybl']), { removed: 1, total: 1499 });
  assert.deepEqual(await client.deleteWatchlist(created.id), { deleted: true });
  await assert.rejects(client.getWatchlist(created.id), NotFoundError);
});
