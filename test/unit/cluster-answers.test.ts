import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDataDir, ingest, buildAndLoad, evidence } from '../helpers.js';

test('VPAs on a shared url form one cluster; the cluster answer follows the spec', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [
      evidence('m1@ybl', 'https://t.me/gang', { evidence_id: 'g1', source_category: 'telegram', risk_category: 'mule', captured_at: '2026-01-10T00:00:00Z' }),
      evidence('m2@ybl', 'https://t.me/gang', { evidence_id: 'g2', source_category: 'telegram', risk_category: 'mule', captured_at: '2026-02-10T00:00:00Z' }),
      evidence('m2@ybl', 'https://bet.example/deposit', { evidence_id: 'g3', captured_at: '2026-04-01T00:00:00Z', screenshot_available: true }),
      evidence('m3@okaxis', 'https://bet.example/deposit', { evidence_id: 'g4', captured_at: '2026-03-01T00:00:00Z' }),
      evidence('m3@okaxis', 'https://bet.example/deposit', { evidence_id: 'g5', captured_at: '2026-03-02T00:00:00Z' }),
      evidence('loner@paytm', 'https://elsewhere.example', { evidence_id: 'l1' }),
    ]);
    const view = await buildAndLoad(t.dir);
    const v = view.verdict('M3@OKAXIS');
    assert.match(v.cluster_id!, /^MC-\d+$/);
    assert.equal(v.cluster_size, 3);
    const cluster = view.cluster(v.cluster_id!)!;
    assert.equal(cluster.cluster_id, v.cluster_id);
    assert.equal(cluster.size, 3);
    assert.equal(cluster.members.length, 3);
    assert.deepEqual(cluster.members.map((m) => m.upi), ['m1@ybl', 'm2@ybl', 'm3@okaxis']);
    for (const member of cluster.members) {
      const mv = view.verdict(member.upi);
      assert.equal(mv.cluster_id, cluster.cluster_id);
      assert.equal(mv.cluster_size, cluster.size);
      assert.equal(member.confidence, mv.confidence);
      assert.equal(member.first_seen, mv.first_seen);
    }
    assert.equal(cluster.created_at, '2026-01-10T00:00:00Z');
    assert.equal(cluster.last_updated, '2026-04-01T00:00:00Z');
    // Two mule members against one gambling member.
    assert.equal(cluster.risk_category, 'mule');
    assert.equal(cluster.total_evidence_count, 5);
    assert.deepEqual(cluster.top_sources, [
      { url: 'https://bet.example/deposit', category: 'gambling', member_count: 2 },
      { url: 'https://t.me/gang', category: 'telegram', member_count: 2 },
    ]);
    assert.ok(cluster.confidence >= Math.max(...cluster.members.map((m) => m.confidence)));
    assert.ok(cluster.confidence <= 1);
    assert.equal(view.verdict('loner@paytm').cluster_id, null);
  } finally {
    await t.cleanup();
  }
});

test('unknown and non-canonical cluster ids find nothing', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [evidence('a@ybl', 'https://u.example'), evidence('b@ybl', 'https://u.example')]);
    const view = await buildAndLoad(t.dir);
    const id = view.verdict('a@ybl').cluster_id!;
    assert.notEqual(view.cluster(id), null);
    assert.equal(view.cluster('MC-999999'), null);
    assert.equal(view.cluster(id.replace('MC-', 'MC-0')), null);
    assert.equal(view.cluster('mc-1'), null);
    assert.equal(view.cluster(''), null);
  } finally {
    await t.cleanup();
  }
});

test('a url with more distinct VPAs than the cap links none of them', async () => {
  const t = await tempDataDir();
  try {
    const page = 'https://aggregator.example/list';
    await ingest(t.dir, t.root, [
      ...['a', 'b', 'c', 'd'].map((h) => evidence(`${h}@ybl`, page)),
      evidence('x@ybl', 'https://small.example'),
      evidence('y@ybl', 'https://small.example'),
      evidence('a@ybl', 'https://small.example'),
    ]);
    const capped = await buildAndLoad(t.dir, { urlMemberCap: 3 });
    assert.equal(capped.verdict('b@ybl').cluster_id, null);
    assert.equal(capped.verdict('a@ybl').cluster_size, 3, 'a, x, y still linked through the small page');
    const cluster = capped.cluster(capped.verdict('a@ybl').cluster_id!)!;
    // The aggregator page is still a source of the member seen there.
    assert.deepEqual(
      cluster.top_sources.map((s) => [s.url, s.member_count]),
      [['https://small.example', 3], [page, 1]],
    );
    const uncapped = await buildAndLoad(t.dir, { urlMemberCap: 4 });
    assert.equal(uncapped.verdict('b@ybl').cluster_size, 6);
  } finally {
    await t.cleanup();
  }
});

test('cluster ids are stable across rebuilds: persist, merge keeps the oldest, split keeps the larger part', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [
      evidence('a1@ybl', 'https://one.example'),
      evidence('a2@ybl', 'https://one.example'),
      evidence('a3@ybl', 'https://one.example'),
    ]);
    const first = await buildAndLoad(t.dir, { urlMemberCap: 4 });
    const idA = first.verdict('a1@ybl').cluster_id!;

    await ingest(t.dir, t.root, [evidence('b1@ybl', 'https://two.example'), evidence('b2@ybl', 'https://two.example')]);
    const second = await buildAndLoad(t.dir, { urlMemberCap: 4 });
    assert.equal(second.verdict('a1@ybl').cluster_id, idA, 'an unchanged cluster keeps its id');
    const idB = second.verdict('b1@ybl').cluster_id!;
    assert.notEqual(idB, idA);

    // b2 appears on page one: the clusters merge and the older id (A) survives.
    await ingest(t.dir, t.root, [evidence('b2@ybl', 'https://one.example')]);
    const merged = await buildAndLoad(t.dir, { urlMemberCap: 4 });
    assert.equal(merged.verdict('b1@ybl').cluster_id, idA);
    assert.equal(merged.verdict('a1@ybl').cluster_size, 5);
    assert.equal(merged.cluster(idB), null, 'the absorbed id is retired');

    // Page one grows past the cap and stops linking: only b1 and b2 (via page two) stay linked,
    // and as the part holding most of A's members they keep A.
    await ingest(t.dir, t.root, [evidence('extra@ybl', 'https://one.example')]);
    const shrunk = await buildAndLoad(t.dir, { urlMemberCap: 4 });
    assert.equal(shrunk.verdict('a1@ybl').cluster_id, null, 'a1 is now linked to nobody');
    assert.equal(shrunk.verdict('b1@ybl').cluster_id, idA);
    assert.equal(shrunk.verdict('b2@ybl').cluster_id, idA);
  } finally {
    await t.cleanup();
  }
});

test('when a cluster splits in two, the larger part keeps the id and the smaller gets a new one', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [
      evidence('a1@ybl', 'https://p1.example'),
      evidence('a2@ybl', 'https://p1.example'),
      evidence('z@ybl', 'https://p1.example'),
      evidence('a1@ybl', 'https://p3.example'),
      evidence('a2@ybl', 'https://p3.example'),
      evidence('z@ybl', 'https://p2.example'),
      evidence('a3@ybl', 'https://p2.example'),
      evidence('a4@ybl', 'https://p2.example'),
      evidence('a5@ybl', 'https://p2.example'),
    ]);
    const whole = await buildAndLoad(t.dir, { urlMemberCap: 4 });
    const idA = whole.verdict('a1@ybl').cluster_id!;
    assert.equal(whole.verdict('a5@ybl').cluster_id, idA);
    assert.equal(whole.verdict('a5@ybl').cluster_size, 6);

    // p1 passes the cap, so z no longer bridges {a1, a2} and {z, a3, a4, a5}.
    await ingest(t.dir, t.root, [evidence('n1@ybl', 'https://p1.example'), evidence('n2@ybl', 'https://p1.example')]);
    const parts = await buildAndLoad(t.dir, { urlMemberCap: 4 });
    assert.equal(parts.verdict('a3@ybl').cluster_id, idA, 'four of the six members: keeps the id');
    assert.equal(parts.verdict('z@ybl').cluster_size, 4);
    const small = parts.verdict('a1@ybl').cluster_id!;
    assert.notEqual(small, idA);
    assert.ok(Number(small.slice(3)) > Number(idA.slice(3)), 'new ids are fresh numbers');
    assert.equal(parts.verdict('a2@ybl').cluster_id, small);
    assert.equal(parts.verdict('n1@ybl').cluster_id, null);

    // A rebuild with nothing new changes no id.
    const again = await buildAndLoad(t.dir, { urlMemberCap: 4 });
    assert.equal(again.verdict('a3@ybl').cluster_id, idA);
    assert.equal(again.verdict('a1@ybl').cluster_id, small);
  } finally {
    await t.cleanup();
  }
});
