import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FileAuditLog } from '../../src/access/audit-log.js';
import type { KeyRecord } from '../../src/access/key-record.js';
import type { DisputeRequest } from '../../src/api/admin-requests.js';
import { DisputeService } from '../../src/corrections/disputes.js';
import { FileDisputeStore, disputeJournalPath } from '../../src/corrections/file-dispute-store.js';
import type { DisputeStore } from '../../src/corrections/dispute-store.js';
import { silentLogger } from '../../src/common/logger.js';
import { ServingView } from '../../src/engine/serving-view.js';
import type { IntakeResult } from '../../src/service/evidence-intake.js';
import type { ServedData } from '../../src/service/served-data.js';
import { buildInProcess, evidence, tempDataDir } from '../helpers.js';
import { FakeDesk } from '../fixtures/fake-desk.js';

const key = (id: string, name: string): KeyRecord => ({ id, name, plan: 'default', scopes: ['screen'], limits: null, created_at: '2026-11-01T00:00:00.000Z', rotated_at: null, revoked_at: null, hash: id });
const BANK = key('key_aaaaaaaaaaaa', 'bank A');
const OTHER = key('key_bbbbbbbbbbbb', 'bank B');
const ANALYST = key('key_cccccccccccc', 'analyst');

type Body = Record<string, unknown>;

/** A service over a data directory's journal, serving FLAGGED flagged@ybl and second@ybl, with the desk given. */
async function disputes(desk: FakeDesk = new FakeDesk(), wrap: (store: DisputeStore) => DisputeStore = (store) => store) {
  const t = await tempDataDir();
  const journal = disputeJournalPath(t.dir);
  const store = wrap(await FileDisputeStore.open(journal));
  const snapshot = buildInProcess([evidence('flagged@ybl', 'https://scam.example/a', { risk_category: 'mule' }), evidence('second@ybl', 'https://scam.example/b')]);
  const served = { view: new ServingView(snapshot) } as unknown as ServedData;
  const audit = new FileAuditLog(join(t.root, 'audit.ndjson'));
  const ingested: string[] = [];
  const ingest = (body: Uint8Array): Promise<IntakeResult> => {
    ingested.push(Buffer.from(body).toString('utf8'));
    return Promise.resolve({ kind: 'stored', items: 1, added: 1, duplicates: 0, dataVersion: 'snap+9' });
  };
  let clock = Date.parse('2026-11-28T09:00:00Z');
  const service = new DisputeService({ store, served, audit, ingest, desk, logger: silentLogger, now: () => clock++ });
  const ask = async (request: DisputeRequest) => {
    const answer = await service.handle(request);
    return { status: answer.status, body: JSON.parse(answer.body) as Body };
  };
  const open = (by: KeyRecord, body: Body) => ask({ op: 'dispute.open', key: by, body });
  const resolve = (id: string, body: Body) => ask({ op: 'dispute.resolve', key: ANALYST, id, body });
  const all = async () => (await ask({ op: 'dispute.list.all', key: ANALYST, status: null, cursor: null, limit: 100 })).body.disputes as Body[];
  return { service, store, journal, audit, ingested, ask, open, resolve, all, close: async () => (await service.close(), await t.cleanup()) };
}

const dispute = (upi = 'flagged@ybl', extra: Body = {}): Body => ({ upi, reason: 'not_fraud', details: 'our merchant since 2019', ...extra });

/** A service whose desk holds items ev-a and ev-b of flagged@ybl and ev-z of second@ybl, and a dispute of flagged@ybl opened by BANK. */
async function disputedWithItems() {
  const desk = new FakeDesk();
  desk.holds('flagged@ybl', 'ev-a', 'ev-b');
  desk.holds('second@ybl', 'ev-z');
  const d = await disputes(desk);
  const id = String((await d.open(BANK, dispute())).body.id);
  return { desk, d, id };
}

test('a FLAGGED verdict is disputed once per key: the second answers 409 with the first id; another key has its own', async () => {
  const d = await disputes();
  try {
    const first = await d.open(BANK, dispute('Flagged@YBL', { reference: 'CASE-1' }));
    assert.equal(first.status, 201);
    assert.match(String(first.body.id), /^dsp_[0-9a-f]{28}$/);
    assert.deepEqual({ ...first.body, id: 'x', created_at: 'x' }, {
      id: 'x',
      upi: 'flagged@ybl',
      status: 'OPEN',
      reason: 'not_fraud',
      details: 'our merchant since 2019',
      reference: 'CASE-1',
      created_at: 'x',
      resolved_at: null,
      resolution_note: null,
    });
    const again = await d.open(BANK, dispute('flagged@ybl', { reason: 'other' }));
    assert.equal(again.status, 409);
    assert.equal(again.body.error, 'conflict');
    assert.equal(again.body.dispute_id, first.body.id);
    assert.equal((await d.open(OTHER, dispute())).status, 201);
    assert.equal((await d.all()).length, 2);
  } finally {
    await d.close();
  }
});

test('refused with nothing stored: a CLEARED VPA (422), a bad VPA (400), unknown or wrongly typed fields, details too long (422)', async () => {
  const d = await disputes();
  try {
    const refusals: [Body, number, RegExp][] = [
      [dispute('nobody@ybl'), 422, /CLEARED/],
      [dispute('not a vpa'), 400, /not a valid VPA/],
      [dispute('flagged@ybl', { note: 'x' }), 422, /unknown field "note"/],
      [dispute('flagged@ybl', { reason: 'fraud' }), 422, /"reason" must be one of not_fraud, owner_request, other/],
      [dispute('flagged@ybl', { details: 42 }), 422, /"details"/],
      [dispute('flagged@ybl', { details: 'x'.repeat(2001) }), 422, /at most 2,000 characters/],
      [dispute('flagged@ybl', { reference: 7 }), 422, /"reference"/],
      [{ reason: 'other', details: '' }, 422, /"upi" must be a string/],
      [dispute(42 as unknown as string), 422, /"upi" must be a string/],
    ];
    for (const [body, status, message] of refusals) {
      const answer = await d.open(BANK, body);
      assert.equal(answer.status, status, JSON.stringify(body));
      assert.match(String(answer.body.message), message);
    }
    assert.equal((await d.open(BANK, dispute('flagged@ybl', { details: 'x'.repeat(2000) }))).status, 201, '2,000 characters are allowed');
    assert.equal((await d.all()).length, 1);
  } finally {
    await d.close();
  }
});

test("a key reads its own disputes only: another key's is 404 as one that does not exist; malformed ids and cursors are 400", async () => {
  const d = await disputes();
  try {
    const id = String((await d.open(BANK, dispute())).body.id);
    await d.open(BANK, dispute('second@ybl'));
    assert.equal((await d.ask({ op: 'dispute.get', key: BANK, id })).status, 200);
    const foreign = await d.ask({ op: 'dispute.get', key: OTHER, id });
    const unknown = await d.ask({ op: 'dispute.get', key: BANK, id: 'dsp_0000000000000000000000000000' });
    assert.deepEqual([foreign.status, foreign.body.error, unknown.status], [404, 'not_found', 404]);
    assert.equal((await d.ask({ op: 'dispute.get', key: BANK, id: 'dsp_../../x' })).status, 400);
    const mine = await d.ask({ op: 'dispute.list', key: BANK, cursor: null, limit: 1 });
    assert.equal((mine.body.disputes as Body[]).length, 1);
    const rest = await d.ask({ op: 'dispute.list', key: BANK, cursor: String(mine.body.next_cursor), limit: 1 });
    assert.deepEqual([(rest.body.disputes as Body[])[0]?.id, rest.body.next_cursor], [id, null]);
    assert.equal(((mine.body.disputes as Body[])[0] as Body).owner, undefined, 'a caller is not shown whose it is');
    assert.deepEqual((await d.ask({ op: 'dispute.list', key: OTHER, cursor: null, limit: 10 })).body.disputes, []);
    assert.equal((await d.ask({ op: 'dispute.list', key: BANK, cursor: 'rep_0000000000000000000000000000', limit: 10 })).status, 400);
    assert.equal((await d.ask({ op: 'dispute.list.all', key: ANALYST, status: 'CLOSED', cursor: null, limit: 10 })).status, 400);
  } finally {
    await d.close();
  }
});

test('rejected changes nothing and is resolved once; upheld clears the VPA through the desk, with the dispute as reference', async () => {
  const desk = new FakeDesk();
  const d = await disputes(desk);
  try {
    const a = String((await d.open(BANK, dispute())).body.id);
    const b = String((await d.open(OTHER, dispute('flagged@ybl', { reason: 'owner_request' }))).body.id);
    const rejected = await d.resolve(a, { outcome: 'rejected', note: 'two victims confirmed' });
    assert.equal(rejected.status, 200);
    assert.deepEqual(rejected.body.data_version, null);
    assert.deepEqual(desk.changes(), []);
    const seen = (await d.ask({ op: 'dispute.get', key: BANK, id: a })).body;
    assert.deepEqual([seen.status, seen.resolution_note, typeof seen.resolved_at], ['REJECTED', 'two victims confirmed', 'string']);
    const twice = await d.resolve(a, { outcome: 'upheld', note: 'changed my mind' });
    assert.deepEqual([twice.status, twice.body.error, twice.body.dispute_id], [409, 'conflict', a]);

    const upheld = await d.resolve(b, { outcome: 'upheld', note: 'the owner proved it' });
    assert.equal(upheld.status, 200);
    assert.deepEqual(desk.changes(), [{ method: 'clear', upi: 'flagged@ybl', reason: 'owner_request', reference: b, by: ANALYST.id }]);
    const resolved = upheld.body.dispute as Body;
    assert.deepEqual([resolved.status, resolved.clearance_id, resolved.resolved_by, resolved.owner, upheld.body.data_version], ['UPHELD', 'clr_1', ANALYST.id, OTHER.id, 'fake+1']);
    // Another dispute of the VPA upheld later keeps the clearance in force, with the version the desk serves it in.
    const c = String((await d.open(BANK, dispute())).body.id);
    const kept = await d.resolve(c, { outcome: 'upheld', note: 'same VPA' });
    assert.deepEqual([(kept.body.dispute as Body).clearance_id, kept.body.data_version], ['clr_1', 'fake+1']);
    assert.equal(desk.changes().length, 1);

    const audit = await d.audit.recent(10);
    assert.deepEqual(
      audit.map((r) => [r.action, r.target, r.actor.key_id, r.details.outcome, r.details.note]),
      [
        ['dispute.resolved', c, ANALYST.id, 'upheld', 'same VPA'],
        ['dispute.resolved', b, ANALYST.id, 'upheld', 'the owner proved it'],
        ['dispute.resolved', a, ANALYST.id, 'rejected', 'two victims confirmed'],
      ],
    );
  } finally {
    await d.close();
  }
});

test("upheld with retract retracts the VPA's items named; another VPA's item, a bad body or a failing desk store nothing", async () => {
  const { desk, d, id } = await disputedWithItems();
  try {
    const review = await d.ask({ op: 'dispute.review', key: ANALYST, id });
    assert.equal(review.status, 200);
    assert.deepEqual((review.body.evidence as Body[]).map((e) => e.evidence_id), ['ev-a', 'ev-b']);
    assert.equal((review.body.verdict as Body).status, 'FLAGGED');
    assert.equal((review.body.dispute as Body).owner, BANK.id);

    const refused: [Body, number][] = [
      [{ outcome: 'upheld', note: 'x', retract: ['ev-a', 'ev-z'] }, 422],
      [{ outcome: 'rejected', note: 'x', retract: ['ev-a'] }, 422],
      [{ outcome: 'upheld', note: '' }, 422],
      [{ outcome: 'upheld' }, 422],
      [{ outcome: 'kept', note: 'x' }, 422],
      [{ outcome: 'upheld', note: 'x', retract: [] }, 422],
      [{ outcome: 'upheld', note: 'x', why: 'x' }, 422],
    ];
    for (const [body, status] of refused) assert.equal((await d.resolve(id, body)).status, status, JSON.stringify(body));
    desk.failNext = new Error('clearance store down');
    const failed = await d.resolve(id, { outcome: 'upheld', note: 'x' });
    assert.deepEqual([failed.status, failed.body.error], [503, 'service_unavailable']);
    assert.equal((await d.ask({ op: 'dispute.get', key: BANK, id })).body.status, 'OPEN');
    assert.deepEqual(await d.audit.recent(10), []);

    const retracted = await d.resolve(id, { outcome: 'upheld', note: 'a wrong sighting', retract: ['ev-b', 'ev-b'] });
    assert.equal(retracted.status, 200);
    assert.deepEqual((retracted.body.dispute as Body).retracted, ['ev-b']);
    assert.equal((retracted.body.dispute as Body).clearance_id, null);
    assert.deepEqual(desk.changes().at(-1), { method: 'retract', ids: ['ev-b'], reason: `not_fraud, dispute ${id}`, by: ANALYST.id });
    assert.equal((await d.resolve('dsp_0000000000000000000000000000', { outcome: 'rejected', note: 'x' })).status, 404);
  } finally {
    await d.close();
  }
});

test("upheld with retract once the items were retracted (a resolution retried after its retraction was stored): still the VPA's, resolved", async () => {
  const { desk, d, id } = await disputedWithItems();
  try {
    // What the first attempt left: its retraction stored, the dispute still open.
    await desk.retract(['ev-b', 'ev-z'], `not_fraud, dispute ${id}`, ANALYST.id);
    assert.equal((await d.resolve(id, { outcome: 'upheld', note: 'x', retract: ['ev-b', 'ev-z'] })).status, 422, "a retracted item of another VPA is still not this one's");
    const retried = await d.resolve(id, { outcome: 'upheld', note: 'a wrong sighting', retract: ['ev-b'] });
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.deepEqual([(retried.body.dispute as Body).status, (retried.body.dispute as Body).retracted], ['UPHELD', ['ev-b']]);
  } finally {
    await d.close();
  }
});

test('reports: confirmed fraud waits for an analyst and is accepted once as one evidence item; false positives open or join a dispute', async () => {
  const d = await disputes();
  try {
    const report = (by: KeyRecord, body: Body) => d.ask({ op: 'report.create', key: by, body, idempotencyKey: '' });
    const fraud = await report(BANK, { upi: 'Victim.Payee@ybl', outcome: 'confirmed_fraud', risk_category: 'phishing', occurred_at: '2026-11-27T10:00:00+05:30', reference: 'PAY-77' });
    assert.equal(fraud.status, 202);
    assert.deepEqual(Object.keys(fraud.body), ['id', 'status']);
    assert.equal(fraud.body.status, 'RECEIVED');
    const id = String(fraud.body.id);
    assert.equal(d.ingested.length, 0, 'a report changes nothing by itself');

    const accepted = await d.ask({ op: 'report.accept', key: ANALYST, id, body: { note: 'matches a complaint' } });
    assert.equal(accepted.status, 200);
    assert.equal(accepted.body.data_version, 'snap+9');
    assert.deepEqual(d.ingested.map((text) => JSON.parse(text) as Body), [
      { evidence_id: `report:${id}`, upi: 'victim.payee@ybl', url: `report:${id}`, source_category: 'phishing', risk_category: 'phishing', captured_at: '2026-11-27T04:30:00.000Z', screenshot_available: false },
    ]);
    assert.ok(d.ingested[0]!.endsWith('\n'));
    const stored = accepted.body.report as Body;
    assert.deepEqual([stored.status, stored.evidence_id, stored.decided_by, stored.decision_note], ['ACCEPTED', `report:${id}`, ANALYST.id, 'matches a complaint']);
    assert.equal((await d.ask({ op: 'report.accept', key: ANALYST, id, body: {} })).status, 409);
    assert.equal((await d.ask({ op: 'report.dismiss', key: ANALYST, id, body: {} })).status, 409);
    assert.equal(d.ingested.length, 1);

    // No category: scam, captured when reported.
    const plain = String((await report(OTHER, { upi: 'plain@ybl', outcome: 'confirmed_fraud' })).body.id);
    const plainReport = (await d.ask({ op: 'report.accept', key: ANALYST, id: plain, body: {} })).body.report as Body;
    const item = JSON.parse(d.ingested[1]!) as Body;
    assert.deepEqual([item.risk_category, item.source_category, item.captured_at], ['scam', 'scam', plainReport.created_at]);

    const falsePositive = String((await report(BANK, { upi: 'flagged@ybl', outcome: 'false_positive' })).body.id);
    const opened = (await d.ask({ op: 'dispute.list', key: BANK, cursor: null, limit: 10 })).body.disputes as Body[];
    assert.equal(opened.length, 1);
    assert.deepEqual([opened[0]!.upi, opened[0]!.reason, opened[0]!.details], ['flagged@ybl', 'not_fraud', `opened by false_positive report ${falsePositive}`]);
    await report(BANK, { upi: 'flagged@ybl', outcome: 'false_positive' });
    await report(BANK, { upi: 'nobody@ybl', outcome: 'false_positive' });
    assert.equal(((await d.ask({ op: 'dispute.list', key: BANK, cursor: null, limit: 10 })).body.disputes as Body[]).length, 1, 'joined, not opened again; a CLEARED VPA has none');
    const queue = (await d.ask({ op: 'report.list', key: ANALYST, status: 'RECEIVED', cursor: null, limit: 10 })).body.reports as Body[];
    assert.deepEqual(queue.map((r) => [r.upi, r.dispute_id]), [['nobody@ybl', null], ['flagged@ybl', opened[0]!.id], ['flagged@ybl', opened[0]!.id]]);
    const notEvidence = await d.ask({ op: 'report.accept', key: ANALYST, id: falsePositive, body: {} });
    assert.deepEqual([notEvidence.status, notEvidence.body.error], [422, 'validation_error']);
    const dismissed = await d.ask({ op: 'report.dismiss', key: ANALYST, id: falsePositive, body: { note: 'handled in its dispute' } });
    assert.deepEqual([dismissed.status, (dismissed.body.report as Body).status, dismissed.body.data_version], [200, 'DISMISSED', null]);

    const audit = await d.audit.recent(10);
    assert.deepEqual(audit.map((r) => [r.action, r.actor.key_id]), [['report.dismissed', ANALYST.id], ['report.accepted', ANALYST.id], ['report.accepted', ANALYST.id]]);
    assert.equal(audit[2]!.details.evidence_id, `report:${id}`);
  } finally {
    await d.close();
  }
});

test('a report retried with its Idempotency-Key is answered as the first and stored once; the key with another report is refused', async () => {
  const d = await disputes();
  try {
    const report = (by: KeyRecord, body: Body, idempotencyKey: string) => d.ask({ op: 'report.create', key: by, body, idempotencyKey });
    const body = { upi: 'Flagged@ybl', outcome: 'false_positive', reference: 'PAY-9' };
    const tries = await Promise.all([1, 2, 3].map(() => report(BANK, body, 'retry-7f3c')));
    assert.deepEqual(tries.map((t) => t.status), [202, 202, 202]);
    assert.equal(new Set(tries.map((t) => t.body.id)).size, 1, 'one report, whichever try stored it');
    const again = await report(BANK, { ...body, upi: 'flagged@ybl' }, 'retry-7f3c');
    assert.deepEqual(again.body, tries[0]!.body, 'the same report (the VPA in another case) later: the first answer');
    const all = async () => (await d.ask({ op: 'report.list', key: ANALYST, status: null, cursor: null, limit: 10 })).body.reports as Body[];
    assert.equal((await all()).length, 1);
    const opened = (await d.ask({ op: 'dispute.list', key: BANK, cursor: null, limit: 10 })).body.disputes as Body[];
    assert.equal(opened.length, 1, 'the retries joined the dispute the first opened');

    // Another report under the same key is refused; another key's Idempotency-Key is its own.
    for (const other of [{ ...body, reference: 'PAY-10' }, { ...body, outcome: 'confirmed_fraud' }, { upi: 'second@ybl', outcome: 'false_positive', reference: 'PAY-9' }]) {
      const refused = await report(BANK, other, 'retry-7f3c');
      assert.deepEqual([refused.status, refused.body.error], [422, 'validation_error'], JSON.stringify(other));
      assert.match(String(refused.body.message), new RegExp(String(tries[0]!.body.id)));
    }
    const theirs = await report(OTHER, body, 'retry-7f3c');
    assert.equal(theirs.status, 202);
    assert.notEqual(theirs.body.id, tries[0]!.body.id);
    // Without the header, each report is a new one, as before.
    await report(BANK, body, '');
    await report(BANK, body, '');
    assert.equal((await all()).length, 4);

    for (const bad of ['x'.repeat(256), 'has space', 'caf\u00e9']) {
      const refused = await report(BANK, body, bad);
      assert.deepEqual([refused.status, refused.body.error], [400, 'bad_request'], bad);
    }
    assert.equal((await all()).length, 4);

    // The journal keeps the keys: after a restart, a retry still finds its report.
    await d.store.close();
    const reopened = await FileDisputeStore.open(d.journal);
    try {
      assert.equal((await reopened.reportByIdempotencyKey(BANK.id, 'retry-7f3c'))?.id, tries[0]!.body.id);
      assert.equal(await reopened.reportByIdempotencyKey(BANK.id, 'never-sent'), null);
    } finally {
      await reopened.close();
    }
  } finally {
    await d.close();
  }
});

test('two tries of one report at once, the first storing second: one report, and its dispute names it', async () => {
  const d = await disputes(undefined, firstReportStoredSecond);
  try {
    const body = { upi: 'flagged@ybl', outcome: 'false_positive' };
    const tries = await Promise.all([1, 2].map(() => d.ask({ op: 'report.create', key: BANK, body, idempotencyKey: 'same-report' })));
    assert.deepEqual(tries.map((t) => t.status), [202, 202]);
    assert.equal(tries[0]!.body.id, tries[1]!.body.id);
    const [stored] = (await d.ask({ op: 'report.list', key: ANALYST, status: null, cursor: null, limit: 10 })).body.reports as Body[];
    const [opened] = (await d.ask({ op: 'dispute.list', key: BANK, cursor: null, limit: 10 })).body.disputes as Body[];
    assert.equal(stored!.id, tries[0]!.body.id);
    assert.equal(stored!.dispute_id, opened!.id);
    assert.equal(opened!.details, `opened by false_positive report ${String(stored!.id)}`);
  } finally {
    await d.close();
  }
});

/** A store whose `addReport` holds the first report back until the second is stored. */
function firstReportStoredSecond(store: DisputeStore): DisputeStore {
  let holdFirst: Promise<void> | null = null;
  let releaseFirst = () => {};
  return {
    ...delegate(store),
    addReport: async (report, key) => {
      if (holdFirst !== null) {
        const stored = await store.addReport(report, key);
        releaseFirst();
        return stored;
      }
      holdFirst = new Promise<void>((resolve) => (releaseFirst = resolve));
      await holdFirst;
      return store.addReport(report, key);
    },
  };
}

/** Every method of `store`, bound (a spread of a class instance copies none). */
function delegate(store: DisputeStore): DisputeStore {
  return {
    openDispute: (dispute) => store.openDispute(dispute),
    dispute: (id) => store.dispute(id),
    disputes: (filter, cursor, limit) => store.disputes(filter, cursor, limit),
    changeDispute: (id, change) => store.changeDispute(id, change),
    addReport: (report, key) => store.addReport(report, key),
    reportByIdempotencyKey: (owner, key) => store.reportByIdempotencyKey(owner, key),
    report: (id) => store.report(id),
    reports: (filter, cursor, limit) => store.reports(filter, cursor, limit),
    changeReport: (id, change) => store.changeReport(id, change),
    close: () => store.close(),
  };
}

test('two different reports at once under one Idempotency-Key: the one refused opened no dispute', async () => {
  const d = await disputes(undefined, firstReportStoredSecond);
  try {
    const send = (reference: string) => d.ask({ op: 'report.create', key: BANK, body: { upi: 'flagged@ybl', outcome: 'false_positive', reference }, idempotencyKey: 'one-key' });
    const [refused, taken] = await Promise.all([send('PAY-1'), send('PAY-2')]);
    assert.deepEqual([refused!.status, refused!.body.error], [422, 'validation_error']);
    assert.equal(taken!.status, 202);
    const reports = (await d.ask({ op: 'report.list', key: ANALYST, status: null, cursor: null, limit: 10 })).body.reports as Body[];
    const opened = (await d.ask({ op: 'dispute.list', key: BANK, cursor: null, limit: 10 })).body.disputes as Body[];
    assert.deepEqual(reports.map((r) => [r.id, r.reference]), [[taken!.body.id, 'PAY-2']]);
    assert.deepEqual(opened.map((o) => o.details), [`opened by false_positive report ${String(taken!.body.id)}`], 'no dispute names the report refused');
    assert.equal(reports[0]!.dispute_id, (await d.all())[0]!.id);
  } finally {
    await d.close();
  }
});

test("a retry of a false_positive report whose first try stopped before its dispute opens the dispute, once", async () => {
  let failing = true;
  const d = await disputes(undefined, (store) => ({
    ...delegate(store),
    openDispute: (dispute) => (failing ? Promise.reject(new Error('the store went away')) : store.openDispute(dispute)),
  }));
  try {
    const send = () => d.ask({ op: 'report.create', key: BANK, body: { upi: 'flagged@ybl', outcome: 'false_positive' }, idempotencyKey: 'after-a-crash' });
    const failed = await send();
    assert.ok(failed.status >= 500, `a failed store is a server error, not ${failed.status}`);
    const [stored] = (await d.ask({ op: 'report.list', key: ANALYST, status: null, cursor: null, limit: 10 })).body.reports as Body[];
    assert.equal(stored!.dispute_id, null, 'stored, its dispute not opened');
    assert.deepEqual(await d.all(), []);

    failing = false;
    const retried = await send();
    assert.deepEqual(retried, { status: 202, body: { id: stored!.id, status: 'RECEIVED' } });
    assert.equal((await send()).status, 202);
    const opened = await d.all();
    assert.deepEqual(opened.map((o) => o.details), [`opened by false_positive report ${String(stored!.id)}`]);
    const [linked] = (await d.ask({ op: 'report.list', key: ANALYST, status: null, cursor: null, limit: 10 })).body.reports as Body[];
    assert.equal(linked!.dispute_id, opened[0]!.id);
  } finally {
    await d.close();
  }
});

test('a bad report or decision is refused with nothing stored', async () => {
  const d = await disputes();
  try {
    const refusals: [Body, number][] = [
      [{ upi: 'payee@ybl', outcome: 'fraud' }, 422],
      [{ upi: 'payee', outcome: 'confirmed_fraud' }, 400],
      [{ upi: 'payee@ybl', outcome: 'confirmed_fraud', risk_category: 'theft' }, 422],
      [{ upi: 'payee@ybl', outcome: 'confirmed_fraud', occurred_at: 'yesterday' }, 422],
      [{ upi: 'payee@ybl', outcome: 'confirmed_fraud', occurred_at: '2099-01-01T00:00:00Z' }, 422],
      [{ upi: 'payee@ybl', outcome: 'confirmed_fraud', reference: 'x'.repeat(201) }, 422],
      [{ upi: 'payee@ybl', outcome: 'confirmed_fraud', amount: 5 }, 422],
    ];
    for (const [body, status] of refusals) assert.equal((await d.ask({ op: 'report.create', key: BANK, body, idempotencyKey: '' })).status, status, JSON.stringify(body));
    assert.deepEqual((await d.ask({ op: 'report.list', key: ANALYST, status: null, cursor: null, limit: 10 })).body.reports, []);
    assert.equal((await d.ask({ op: 'report.accept', key: ANALYST, id: 'rep_x', body: {} })).status, 400);
    assert.equal((await d.ask({ op: 'report.accept', key: ANALYST, id: 'rep_0000000000000000000000000000', body: {} })).status, 404);
    const id = String((await d.ask({ op: 'report.create', key: BANK, body: { upi: 'payee@ybl', outcome: 'confirmed_fraud' }, idempotencyKey: '' })).body.id);
    assert.equal((await d.ask({ op: 'report.dismiss', key: ANALYST, id, body: { note: 5 } })).status, 422);
    assert.equal((await d.ask({ op: 'report.list', key: ANALYST, status: 'RECEIVED', cursor: null, limit: 10 })).body.reports instanceof Array, true);
    assert.equal(d.ingested.length, 0);
  } finally {
    await d.close();
  }
});
