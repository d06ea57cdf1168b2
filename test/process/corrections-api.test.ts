import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { KeyAdmin } from '../../src/access/key-admin.js';
import { FileKeyBackend, keyFilePath } from '../../src/access/key-file.js';
import type { KeyScope } from '../../src/access/key-record.js';
import { AuditListSchema, ClearanceListSchema } from '../../src/api/admin-schemas.js';
import { ErrorSchema } from '../../src/api/schemas.js';
import { dataDir } from '../../src/common/data-dir.js';
import { correctionJournalPath } from '../../src/corrections/journal.js';
import { evidence, ingest, tempDataDir } from '../helpers.js';
import { assertSchema } from '../schema-check.js';
import { runCli, startServer, type RunningServer } from '../server-process.js';

// One server, and its data directory, for what the corrections routes and
// `upi-risk retract` refuse or answer before the engine is asked anything.
let root: string;
let dir: string;
let server: RunningServer;
let cleanup: () => Promise<void>;
const keys: Record<'screen' | 'ingest' | 'admin' | 'both', string> = { screen: '', ingest: '', admin: '', both: '' };

before(async () => {
  const t = await tempDataDir();
  root = t.root;
  dir = t.dir.root;
  cleanup = t.cleanup;
  await ingest(t.dir, t.root, [evidence('mule@ybl', 'https://t.me/a', { evidence_id: 'ev-known-1' }), evidence('shop@ybl', 'https://t.me/b', { evidence_id: 'ev-known-2' })]);
  const admin = new KeyAdmin(new FileKeyBackend(keyFilePath(t.dir)));
  const make = async (scopes: KeyScope[]) => (await admin.create({ name: scopes.join('+'), plan: 'default', limits: null, scopes })).key;
  keys.screen = await make(['screen']);
  keys.ingest = await make(['ingest']);
  keys.admin = await make(['admin']);
  keys.both = await make(['ingest', 'admin']);
  server = await startServer(dir);
});

after(async () => {
  assert.equal(await server.stop(), 0);
  await cleanup();
});

interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** A call with a key; an error answer is checked against the error body, a success against `schema`. */
async function call(path: string, key: string | null, options: { method?: string; body?: string | object; type?: string; schema?: TSchema } = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers['content-type'] = options.type ?? 'application/json';
  const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  const response = await fetch(`${server.base}${path}`, { method: options.method ?? 'GET', headers, ...(body === undefined ? {} : { body }) });
  const json = JSON.parse(await response.text()) as Record<string, unknown>;
  if (response.status >= 400) assertSchema(ErrorSchema, json);
  else if (options.schema !== undefined) assertSchema(options.schema, json);
  return { status: response.status, body: json };
}

const RETRACT = '/v1/admin/retractions';
const CLEAR = '/v1/admin/clearances';
const UNKNOWN_CLEARANCE = `${CLEAR}/clr_0000000000000000`;

test('each route takes the scope it needs: retractions ingest, clearances admin; others get 403, no key 401', async () => {
  const retraction = { evidence_ids: ['ev-known-1'], reason: 'scope check' };
  const clearance = { upi: 'shop@ybl', reason: 'scope check' };
  const refused: readonly [string, string, string, object | undefined][] = [
    [keys.screen, 'POST', RETRACT, retraction],
    [keys.admin, 'POST', RETRACT, retraction],
    [keys.ingest, 'POST', CLEAR, clearance],
    [keys.screen, 'POST', CLEAR, clearance],
    [keys.ingest, 'GET', CLEAR, undefined],
    [keys.ingest, 'GET', UNKNOWN_CLEARANCE, undefined],
    [keys.ingest, 'DELETE', UNKNOWN_CLEARANCE, undefined],
  ];
  for (const [key, method, path, body] of refused) {
    const answer = await call(path, key, { method, ...(body === undefined ? {} : { body }) });
    assert.equal(answer.status, 403, `${method} ${path}`);
    assert.equal(answer.body.error, 'forbidden');
  }
  assert.equal((await call(RETRACT, null, { method: 'POST', body: retraction })).status, 401);
  assert.equal((await call(CLEAR, null)).status, 401);
  assert.equal((await call(CLEAR, keys.admin, { schema: ClearanceListSchema })).status, 200);
  assert.equal((await call(CLEAR, keys.both, { schema: ClearanceListSchema })).status, 200);
});

test('bad bodies and queries are refused with the error body and the status docs/api.md gives; nothing is stored', async () => {
  const refused: readonly [string, string, { body?: string | object; type?: string }, number, RegExp][] = [
    ['POST', RETRACT, { body: '{"evidence_ids": [' }, 400, /not valid JSON/],
    ['POST', RETRACT, { body: '["ev-known-1"]' }, 422, /JSON object/],
    ['POST', RETRACT, { body: { evidence_ids: ['ev-known-1'], reason: 'x' }, type: 'text/plain' }, 400, /Content-Type/],
    ['POST', RETRACT, { body: { evidence_ids: ['ev-known-1'], reason: 'x'.repeat(70 * 1024) } }, 400, /./],
    ['POST', RETRACT, { body: { evidence_ids: Array.from({ length: 1001 }, (_, i) => `e${i}`), reason: 'x' } }, 400, /1 to 1000 evidence ids/],
    ['POST', RETRACT, { body: { evidence_ids: ['ev\u0000'], reason: 'x' } }, 400, /"evidence_ids"/],
    ['POST', RETRACT, { body: { evidence_ids: ['ev-known-1'], reason: 'x'.repeat(501) } }, 400, /"reason"/],
    ['POST', RETRACT, { body: { evidence_ids: ['ev-known-1'], reason: 'x', force: true } }, 422, /unknown field "force"/],
    ['POST', RETRACT, { body: { evidence_ids: 'ev-known-1', reason: 'x' } }, 422, /"evidence_ids"/],
    ['POST', RETRACT, {}, 422, /"evidence_ids" is required/],
    ['POST', CLEAR, { body: { upi: 'shop-at-ybl', reason: 'x' } }, 400, /"upi" must be a VPA/],
    ['POST', CLEAR, { body: { upi: 'shop@ybl', reason: 'x', reference: 'r'.repeat(201) } }, 400, /"reference"/],
    ['POST', CLEAR, { body: { upi: 'shop@ybl', reason: 'x', expires_at: 3 } }, 422, /unknown field "expires_at"/],
    ['POST', CLEAR, { body: { upi: 'shop@ybl' } }, 422, /"reason" is required/],
    ['DELETE', UNKNOWN_CLEARANCE, { body: { why: 'x' } }, 422, /unknown field "why"/],
    ['GET', `${CLEAR}?limit=0`, {}, 400, /"limit"/],
    ['GET', `${CLEAR}?limit=many`, {}, 400, /"limit"/],
    ['GET', `${CLEAR}?upi=not-a-vpa`, {}, 400, /"upi"/],
    ['GET', `${CLEAR}?upi=a%zz@ybl`, {}, 400, /percent-encoding/],
    ['GET', `${CLEAR}?cursor=clr_ffffffffffffffff`, {}, 400, /"cursor"/],
  ];
  for (const [method, path, options, status, message] of refused) {
    const answer = await call(path, keys.both, { method, ...options });
    assert.equal(answer.status, status, `${method} ${path} ${JSON.stringify(options.body ?? null).slice(0, 60)}: ${JSON.stringify(answer.body)}`);
    assert.match(answer.body.message as string, message, `${method} ${path}`);
  }
  await assert.rejects(access(correctionJournalPath(dataDir(dir))), 'no correction stored');
});

test('unknown clearances are 404; the list of none is empty', async () => {
  for (const method of ['GET', 'DELETE']) {
    for (const path of [UNKNOWN_CLEARANCE, `${CLEAR}/not-an-id`]) {
      const answer = await call(path, keys.admin, { method });
      assert.equal(answer.status, 404, `${method} ${path}`);
      assert.equal(answer.body.error, 'not_found');
    }
  }
  const list = await call(`${CLEAR}?upi=Shop@YBL&limit=5`, keys.admin, { schema: ClearanceListSchema });
  assert.deepEqual(list.body, { clearances: [], next_cursor: null });
});

test('upi-risk retract: usage errors exit 2, ids from the line and a file, the answer the API gives, audited as cli', async () => {
  const usage: readonly [string[], RegExp][] = [
    [['ev-known-1'], /--reason/],
    [['--reason', '   ', 'ev-known-1'], /--reason/],
    [['--reason', 'x'.repeat(501), 'ev-known-1'], /--reason/],
    [['--reason', 'wrong'], /no evidence ids/],
    [['--reason', 'wrong', 'x'.repeat(257)], /not an evidence id/],
    [['--reason', 'wrong', '--file', join(root, 'missing.txt')], /cannot read --file/],
    [['--reason', 'wrong', '--store', 'postgres://postgres@127.0.0.1:5432/test', 'ev-known-1'], /--data-dir and --store exclude each other/],
    [['--reason', 'wrong', '--bogus', 'ev-known-1'], /bogus/],
  ];
  for (const [args, message] of usage) {
    const result = await runCli(['retract', '--data-dir', dir, ...args]);
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
    assert.match(result.stderr, /ERR_CONFIG/);
  }
  const help = await runCli(['retract', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /data_version is null/);

  const file = join(root, 'ids.txt');
  await writeFile(file, 'ev-known-2\r\n\nev-unknown-9\n');
  const first = await runCli(['retract', '--data-dir', dir, '--reason', 'reported twice', '--file', file, 'ev-known-1', 'ev-known-2']);
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(JSON.parse(first.stdout), { retracted: 2, unknown: ['ev-unknown-9'], already_retracted: 0, data_version: null });
  const again = await runCli(['retract', '--data-dir', dir, '--reason', 'once more', 'ev-known-1']);
  assert.deepEqual(JSON.parse(again.stdout), { retracted: 0, unknown: [], already_retracted: 1, data_version: null });

  const lines = (await readFile(correctionJournalPath(dataDir(dir)), 'utf8')).trim().split('\n');
  assert.equal(lines.length, 1, 'the second retracted nothing, and stored nothing');
  const audit = await call('/v1/admin/audit?limit=5', keys.admin, { schema: AuditListSchema });
  const retracted = (audit.body.records as { action: string; actor: { key_id: string | null; name: string }; details: { reason: string; evidence_ids: string[] } }[]).filter(
    (r) => r.action === 'evidence.retracted',
  );
  assert.equal(retracted.length, 1);
  assert.deepEqual(retracted[0]!.actor, { key_id: null, name: 'cli' });
  assert.equal(retracted[0]!.details.reason, 'reported twice');
  assert.deepEqual(retracted[0]!.details.evidence_ids, ['ev-known-1', 'ev-known-2'], 'the ids given, then those of the file');
});
