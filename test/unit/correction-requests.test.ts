import { test } from 'node:test';
import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import type { KeyRecord } from '../../src/access/key-record.js';
import type { CorrectionRequest } from '../../src/api/admin-requests.js';
import { ClearanceChangeSchema, ClearanceConflictSchema, ClearanceListSchema, ClearanceSchema, RetractionOutcomeSchema } from '../../src/api/admin-schemas.js';
import { ErrorSchema } from '../../src/api/schemas.js';
import { silentLogger } from '../../src/common/logger.js';
import { CorrectionRequests } from '../../src/corrections/requests.js';
import { MAX_EVIDENCE_ID_LENGTH } from '../../src/evidence/record.js';
import { EVIDENCE_ID_MAX_LENGTH } from '../../src/api/admin-schemas.js';
import { withTestDesk, type FakeCorrectionEngine } from '../fixtures/fake-correction-engine.js';
import { assertSchema } from '../schema-check.js';

const KEY: KeyRecord = {
  id: 'key_0123456789ab',
  name: 'ops',
  plan: 'default',
  scopes: ['ingest', 'admin'],
  limits: null,
  created_at: '2026-11-01T00:00:00.000Z',
  rotated_at: null,
  revoked_at: null,
  hash: 'x',
};
const T0 = Date.parse('2026-11-01T00:00:00Z');

interface Answered {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** Run `work` with the requests of a desk on a fake engine that knows one item. */
function withRequests(work: (ask: (request: CorrectionRequest) => Promise<Answered>, fake: FakeCorrectionEngine, journal: string) => Promise<void>): Promise<void> {
  return withTestDesk([{ evidence_id: 'ev-1', upi: 'mule@ybl', url: 'https://a.example', capturedAt: T0 }], async ({ desk, fake, path }) => {
    const requests = new CorrectionRequests({ desk, logger: silentLogger });
    const ask = async (request: CorrectionRequest) => {
      const answer = await requests.handle(request);
      return { status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> };
    };
    await work(ask, fake, path);
  });
}

const retract = (body: unknown): CorrectionRequest => ({ op: 'retractions.create', key: KEY, body });
const clear = (body: unknown): CorrectionRequest => ({ op: 'clearances.create', key: KEY, body });

test('the evidence id rule is the ingestion contract', () => {
  assert.equal(EVIDENCE_ID_MAX_LENGTH, MAX_EVIDENCE_ID_LENGTH);
});

test('a body of the wrong shape is 422, a value a field cannot take 400, each naming the field; nothing is stored', () =>
  withRequests(async (ask, fake, journal) => {
    const cases: readonly [CorrectionRequest, number, RegExp][] = [
      [retract({}), 422, /"evidence_ids" is required/],
      [retract({ evidence_ids: 'ev-1', reason: 'x' }), 422, /"evidence_ids" must be a list/],
      [retract({ evidence_ids: ['ev-1', 7], reason: 'x' }), 422, /"evidence_ids" must be .*\(item 1 is not\)/],
      [retract({ evidence_ids: ['ev-1'], reason: 5 }), 422, /"reason" must be a text/],
      [retract({ evidence_ids: ['ev-1'], reason: 'x', why: 'y' }), 422, /unknown field "why"; the fields are evidence_ids, reason/],
      [retract({ evidence_ids: ['ev-1'], reason: 'x', 'a/b': 1 }), 422, /unknown field "a\/b"/],
      [retract({ evidence_ids: ['ev-1'] }), 422, /"reason" is required/],
      [retract({ evidence_ids: [], reason: 'x' }), 400, /1 to 1000 evidence ids/],
      [retract({ evidence_ids: Array.from({ length: 1001 }, (_, i) => `ev-${i}`), reason: 'x' }), 400, /1 to 1000 evidence ids/],
      [retract({ evidence_ids: ['ok', 'bad\u0001id'], reason: 'x' }), 400, /\(item 1 is not\)/],
      [retract({ evidence_ids: ['x'.repeat(257)], reason: 'x' }), 400, /"evidence_ids"/],
      [retract({ evidence_ids: [''], reason: 'x' }), 400, /"evidence_ids"/],
      [retract({ evidence_ids: ['ev-1'], reason: '' }), 400, /"reason" must be a text of 1 to 500 characters/],
      [retract({ evidence_ids: ['ev-1'], reason: '   ' }), 400, /not all spaces/],
      [retract({ evidence_ids: ['ev-1'], reason: 'x'.repeat(501) }), 400, /"reason"/],
      [clear({ reason: 'x' }), 422, /"upi" is required/],
      [clear({ upi: 42, reason: 'x' }), 422, /"upi" must be a VPA/],
      [clear({ upi: 'not-a-vpa', reason: 'x' }), 400, /"upi" must be a VPA/],
      [clear({ upi: 'a@ybl', reason: 'x', reference: null }), 422, /"reference"/],
      [clear({ upi: 'a@ybl', reason: 'x', reference: 'r'.repeat(201) }), 400, /"reference" must be a text of 1 to 200 characters/],
      [clear({ upi: 'a@ybl', reason: 'x', until: '2027' }), 422, /unknown field "until"/],
      [clear({ upi: 'a@ybl', reason: 'x'.repeat(501) }), 400, /"reason"/],
      // What PostgreSQL would refuse and a file would keep: refused alike in both modes.
      [retract({ evidence_ids: ['ev-1'], reason: 'wrong\u0000' }), 400, /"reason" must be .*without control characters/],
      [retract({ evidence_ids: ['ev-1', 'ev-\ud800'], reason: 'x' }), 400, /"evidence_ids" .*\(item 1 is not\)/],
      [clear({ upi: 'a@ybl', reason: 'half \udc00 pair' }), 400, /"reason"/],
      [clear({ upi: 'a@ybl', reason: 'x', reference: 'T-1\u0007' }), 400, /"reference"/],
      [{ op: 'clearances.end', key: KEY, id: 'clr_0123456789abcdef', body: { reason: 'done\u001b' } }, 400, /"reason"/],
    ];
    for (const [request, status, message] of cases) {
      const answer = await ask(request);
      assert.equal(answer.status, status, `${JSON.stringify(request.op)} ${JSON.stringify((request as { body: unknown }).body).slice(0, 120)}`);
      assertSchema(ErrorSchema, answer.body);
      assert.equal(answer.body.error, status === 400 ? 'bad_request' : 'validation_error');
      assert.match(answer.body.message as string, message);
    }
    assert.deepEqual(fake.located, [], 'the engine was never asked');
    assert.deepEqual(fake.askedSources, []);
    await assert.rejects(access(journal), 'no journal written');
  }));

test('answers: a retraction 200, a clearance 201, a second one 409 with the id in force, unknown ids 404', () =>
  withRequests(async (ask) => {
    const retracted = await ask(retract({ evidence_ids: ['ev-1', 'nope'], reason: 'wrong VPA' }));
    assert.equal(retracted.status, 200);
    assertSchema(RetractionOutcomeSchema, retracted.body);
    assert.deepEqual(retracted.body, { retracted: 1, unknown: ['nope'], already_retracted: 0, data_version: 'fake+1' });

    const made = await ask(clear({ upi: 'Shop@ybl', reason: 'verified', reference: 'CASE-1' }));
    assert.equal(made.status, 201);
    assertSchema(ClearanceChangeSchema, made.body);
    assert.equal(made.body.upi, 'shop@ybl');
    assert.equal(made.body.created_by, KEY.id);

    const conflict = await ask(clear({ upi: 'shop@ybl', reason: 'again' }));
    assert.equal(conflict.status, 409);
    assertSchema(ClearanceConflictSchema, conflict.body);
    assert.equal(conflict.body.clearance_id, made.body.id);

    const got = await ask({ op: 'clearances.get', key: KEY, id: made.body.id as string });
    assert.equal(got.status, 200);
    assertSchema(ClearanceSchema, got.body);
    assert.equal(got.body.reference, 'CASE-1');

    for (const request of [
      { op: 'clearances.get', key: KEY, id: 'clr_0000000000000000' },
      { op: 'clearances.get', key: KEY, id: '../x' },
      { op: 'clearances.end', key: KEY, id: 'clr_0000000000000000', body: {} },
    ] as const) {
      const missing = await ask(request);
      assert.equal(missing.status, 404, request.id);
      assert.equal(missing.body.error, 'not_found');
    }

    const badEnd = await ask({ op: 'clearances.end', key: KEY, id: made.body.id as string, body: { reason: 'x'.repeat(501) } });
    assert.equal(badEnd.status, 400);
    const ended = await ask({ op: 'clearances.end', key: KEY, id: made.body.id as string, body: { reason: 'complaints' } });
    assert.equal(ended.status, 200);
    assertSchema(ClearanceChangeSchema, ended.body);
    assert.equal(ended.body.ended_by, KEY.id);
  }));

test('clearances are listed in the order made, a page at a time, by VPA or all', () =>
  withRequests(async (ask) => {
    const ids: string[] = [];
    for (const upi of ['a@ybl', 'b@ybl', 'a@ybl', 'c@ybl', 'a@ybl']) {
      const standing = (await ask({ op: 'clearances.list', key: KEY, upi, cursor: null, limit: 1000 })).body.clearances as { id: string; ended_at: string | null }[];
      const open = standing.find((c) => c.ended_at === null);
      if (open !== undefined) await ask({ op: 'clearances.end', key: KEY, id: open.id, body: {} });
      ids.push((await ask(clear({ upi, reason: 'verified' }))).body.id as string);
    }
    const pages = async (upi: string | null, limit: number): Promise<string[][]> => {
      const out: string[][] = [];
      let cursor: string | null = null;
      do {
        const page = await ask({ op: 'clearances.list', key: KEY, upi, cursor, limit });
        assert.equal(page.status, 200);
        assertSchema(ClearanceListSchema, page.body);
        out.push((page.body.clearances as { id: string }[]).map((c) => c.id));
        cursor = page.body.next_cursor as string | null;
      } while (cursor !== null);
      return out;
    };
    assert.deepEqual(await pages(null, 2), [ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)]);
    assert.deepEqual(await pages('a@ybl', 2), [
      [ids[0], ids[2]],
      [ids[4]],
    ]);
    assert.deepEqual(await pages('nobody@ybl', 10), [[]]);
    assert.deepEqual(await pages(null, 5), [ids], 'a last full page has no next cursor');

    const bad = await ask({ op: 'clearances.list', key: KEY, upi: null, cursor: 'clr_ffffffffffffffff', limit: 10 });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message as string, /"cursor"/);
  }));

test('a correction the engine cannot serve answers 503, without the failure\'s own text; it was stored', () =>
  withRequests(async (ask, fake) => {
    // What a store's failure may say: its host, database and schema, and the database's message.
    fake.failNextApply = Object.assign(new Error('store postgres://risk@db-7.internal:5432/prod (schema upi_risk): connection refused'), { code: 'ERR_STORE' });
    const answer = await ask(retract({ evidence_ids: ['ev-1'], reason: 'wrong' }));
    assert.equal(answer.status, 503);
    assert.match(answer.body.message as string, /^the correction could not be carried out \(ERR_STORE\)/);
    assert.doesNotMatch(answer.body.message as string, /db-7|upi_risk|refused/);
    const again = await ask(retract({ evidence_ids: ['ev-1'], reason: 'wrong' }));
    assert.equal(again.body.already_retracted, 1);
  }));
