import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tempDataDir, ingest, buildAndLoad, evidence } from '../helpers.js';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';

// One small hand-written data set; each test pins one aggregation rule of docs/scoring.md.
let view: SnapshotView;
let cleanup: () => Promise<void>;

before(async () => {
  const t = await tempDataDir();
  cleanup = t.cleanup;
  await ingest(t.dir, t.root, [
    // alice: two urls, three captures, one repeated url.
    evidence('alice@ybl', 'https://bet1.example/pay', { evidence_id: 'a1', captured_at: '2026-01-01T00:00:00Z', source_category: 'gambling' }),
    evidence('Alice@YBL', 'https://bet1.example/pay', { evidence_id: 'a2', captured_at: '2026-03-01T12:00:00+05:30', screenshot_available: true }),
    evidence('alice@ybl', 'https://t.me/mulechannel', { evidence_id: 'a3', captured_at: '2026-02-01T00:00:00Z', source_category: 'telegram', risk_category: 'mule' }),
    // bob: risk tie between scam (telegram default) and gambling → scam wins by the tie order.
    evidence('bob@okaxis', 'https://t.me/other', { evidence_id: 'b1', source_category: 'telegram' }),
    evidence('bob@okaxis', 'https://casino.example', { evidence_id: 'b2', source_category: 'gambling' }),
    // carol: majority beats tie order: two gambling vs one mule.
    evidence('carol@paytm', 'https://x.example/1', { evidence_id: 'c1', risk_category: 'gambling' }),
    evidence('carol@paytm', 'https://x.example/2', { evidence_id: 'c2', risk_category: 'gambling' }),
    evidence('carol@paytm', 'https://x.example/3', { evidence_id: 'c3', risk_category: 'mule' }),
    // dave: a tie between mule and nbfc_impersonation → mule.
    evidence('dave@ibl', 'https://loan.example', { evidence_id: 'd1', source_category: 'scam', risk_category: 'nbfc_impersonation' }),
    evidence('dave@ibl', 'https://loan.example', { evidence_id: 'd2', source_category: 'scam', risk_category: 'mule' }),
    // erin: phishing default; same url as nobody else.
    evidence('erin@oksbi', 'https://kyc-update.example/login', { evidence_id: 'e1', source_category: 'phishing', captured_at: '2025-12-31T23:59:59.250-08:00' }),
  ]);
  view = await buildAndLoad(t.dir);
});

after(() => cleanup());

test('a VPA named by no evidence is CLEARED with the spec null, 0 and empty values', () => {
  const v = view.verdict('nobody@ybl');
  assert.deepEqual(v, {
    upi: 'nobody@ybl',
    status: 'CLEARED',
    confidence: null,
    risk_category: null,
    cluster_id: null,
    cluster_size: 0,
    first_seen: null,
    last_seen: null,
    sources: [],
    evidence_count: 0,
  });
});

test('a VPA named by evidence is FLAGGED, matched case-insensitively, and echoes the query', () => {
  for (const query of ['alice@ybl', 'ALICE@YBL', 'aLiCe@Ybl']) {
    const v = view.verdict(query);
    assert.equal(v.status, 'FLAGGED');
    assert.equal(v.upi, query);
  }
});

test('sources: one per distinct url, latest capture there, screenshot if any capture has one, newest first', () => {
  const v = view.verdict('alice@ybl');
  assert.deepEqual(v.sources, [
    { url: 'https://bet1.example/pay', category: 'gambling', captured_at: '2026-03-01T06:30:00Z', screenshot_available: true },
    { url: 'https://t.me/mulechannel', category: 'telegram', captured_at: '2026-02-01T00:00:00Z', screenshot_available: false },
  ]);
});

test('evidence_count counts distinct evidence ids; first_seen and last_seen are the extremes in UTC', () => {
  const v = view.verdict('alice@ybl');
  assert.equal(v.evidence_count, 3);
  assert.equal(v.first_seen, '2026-01-01T00:00:00Z');
  assert.equal(v.last_seen, '2026-03-01T06:30:00Z');
  const e = view.verdict('erin@oksbi');
  assert.equal(e.first_seen, '2026-01-01T07:59:59.250Z');
  assert.equal(e.last_seen, e.first_seen);
});

test('risk_category: most evidence items win; ties go by the fixed order mule, nbfc_impersonation, phishing, scam, gambling', () => {
  assert.equal(view.verdict('alice@ybl').risk_category, 'gambling');
  assert.equal(view.verdict('bob@okaxis').risk_category, 'scam');
  assert.equal(view.verdict('carol@paytm').risk_category, 'gambling');
  assert.equal(view.verdict('dave@ibl').risk_category, 'mule');
  assert.equal(view.verdict('erin@oksbi').risk_category, 'phishing');
});

test('confidence is in [0, 1] with four decimals and grows with breadth', () => {
  for (const upi of ['alice@ybl', 'bob@okaxis', 'carol@paytm', 'dave@ibl', 'erin@oksbi']) {
    const c = view.verdict(upi).confidence!;
    assert.ok(c > 0 && c <= 1, `${upi} ${c}`);
    assert.equal(Math.round(c * 10_000) / 10_000, c);
  }
  assert.ok(view.verdict('carol@paytm').confidence! > view.verdict('erin@oksbi').confidence!);
});

test('batch items carry the verdict fields without sources or timestamps', () => {
  const v = view.verdict('carol@paytm');
  assert.deepEqual(view.batchItem('carol@paytm'), {
    upi: 'carol@paytm',
    status: 'FLAGGED',
    confidence: v.confidence,
    risk_category: v.risk_category,
    cluster_id: v.cluster_id,
    cluster_size: v.cluster_size,
    evidence_count: v.evidence_count,
  });
  assert.deepEqual(view.batchItem('ghost@ybl'), {
    upi: 'ghost@ybl',
    status: 'CLEARED',
    confidence: null,
    risk_category: null,
    cluster_id: null,
    cluster_size: 0,
    evidence_count: 0,
  });
});

test('a VPA that shares no url with another has no cluster', () => {
  for (const upi of ['alice@ybl', 'bob@okaxis', 'erin@oksbi']) {
    const v = view.verdict(upi);
    assert.equal(v.cluster_id, null);
    assert.equal(v.cluster_size, 0);
  }
  assert.equal(view.meta.clusterCount, 0);
});
