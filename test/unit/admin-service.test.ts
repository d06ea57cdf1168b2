import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { AdminService } from '../../src/admin/admin-service.js';
import { IntelligenceStats } from '../../src/admin/intelligence-stats.js';
import { FileAuditLog } from '../../src/access/audit-log.js';
import { MemorySessionStore, SESSION_COOKIE } from '../../src/access/console-sessions.js';
import { KeyAdmin } from '../../src/access/key-admin.js';
import { FileKeyBackend } from '../../src/access/key-file.js';
import { KeyRegistry } from '../../src/access/key-registry.js';
import { FileUsageLedger } from '../../src/access/key-usage.js';
import { loadPlans } from '../../src/access/plans.js';
import type { KeyRecord } from '../../src/access/key-record.js';
import { hashApiKey } from '../../src/access/api-key.js';
import type { ServedData } from '../../src/service/served-data.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDataDir } from '../helpers.js';

async function adminService(compact: ((why: string) => { started: boolean; snapshot: string }) | null = null) {
  const { root, cleanup } = await tempDataDir();
  const backend = new FileKeyBackend(join(root, 'keys.json'));
  const audit = new FileAuditLog(join(root, 'audit.ndjson'));
  const keyAdmin = new KeyAdmin(backend, audit);
  const created = await keyAdmin.create({ name: 'ops', scopes: ['screen', 'admin'] });
  const registry = new KeyRegistry(backend);
  await registry.load();
  const caller = registry.verify(created.key)!;
  const stats = new IntelligenceStats({ mode: 'embedded', served: {} as ServedData, delta: () => ({ vpas: 0, evidenceItems: 0, bytes: 0, ageSeconds: 0, secondsSinceCompaction: 0 }), builds: async () => [] });
  const service = new AdminService({
    registry,
    keyAdmin,
    audit,
    sessions: new MemorySessionStore(),
    usage: await FileUsageLedger.open(join(root, 'usage.json')),
    plans: await loadPlans(),
    stats,
    compact,
    logger: silentLogger,
  });
  return { service, caller, registry, keyAdmin, audit, cleanup };
}

const json = (body: string) => JSON.parse(body) as Record<string, unknown>;

test('a key is created only from a valid body: a name, a known plan, known scopes, no other field', async () => {
  const { service, caller, cleanup } = await adminService();
  try {
    for (const [body, pattern] of [
      [{}, /"name"/],
      [{ name: '' }, /"name"/],
      [{ name: 'x'.repeat(201) }, /"name"/],
      [{ name: 'bank', plan: 'gold' }, /"plan" must be one of default/],
      [{ name: 'bank', scopes: [] }, /"scopes"/],
      [{ name: 'bank', scopes: ['screen', 'screen'] }, /"scopes"/],
      [{ name: 'bank', scopes: ['root'] }, /"scopes"/],
      [{ name: 'bank', plans: 'default' }, /unknown field "plans"/],
    ] as const) {
      const answer = await service.handle({ op: 'keys.create', key: caller, body });
      assert.equal(answer.status, 422, JSON.stringify(body));
      assert.match(String(json(answer.body).message), pattern);
    }
    const created = await service.handle({ op: 'keys.create', key: caller, body: { name: ' bank ', plan: 'standard', scopes: ['ingest', 'screen'] } });
    assert.equal(created.status, 201);
    const record = json(created.body).record as Record<string, unknown>;
    assert.deepEqual([record.name, record.plan, record.scopes], ['bank', 'standard', ['screen', 'ingest']]);
    assert.equal('hash' in record, false, 'never the hash');
  } finally {
    await cleanup();
  }
});

test('changes to unknown keys are 404; a revoked key cannot be rotated or re-planned (422)', async () => {
  const { service, caller, keyAdmin, cleanup } = await adminService();
  try {
    for (const op of ['keys.rotate', 'keys.revoke'] as const) {
      assert.equal((await service.handle({ op, key: caller, id: 'key_000000000000' })).status, 404);
    }
    assert.equal((await service.handle({ op: 'keys.update', key: caller, id: 'key_000000000000', body: { plan: 'default' } })).status, 404);
    const { record } = await keyAdmin.create({ name: 'old' });
    assert.equal((await service.handle({ op: 'keys.revoke', key: caller, id: record.id })).status, 200);
    assert.equal((await service.handle({ op: 'keys.rotate', key: caller, id: record.id })).status, 422);
    assert.equal((await service.handle({ op: 'keys.update', key: caller, id: record.id, body: { plan: 'standard' } })).status, 422);
    assert.equal((await service.handle({ op: 'keys.update', key: caller, id: record.id, body: {} })).status, 422);
  } finally {
    await cleanup();
  }
});

test('every change is in the audit log with who made it and what changed', async () => {
  const { service, caller, cleanup } = await adminService();
  try {
    const created = json((await service.handle({ op: 'keys.create', key: caller, body: { name: 'bank' } })).body);
    const id = (created.record as KeyRecord).id;
    await service.handle({ op: 'keys.update', key: caller, id, body: { plan: 'enterprise' } });
    await service.handle({ op: 'keys.rotate', key: caller, id });
    await service.handle({ op: 'keys.revoke', key: caller, id });
    const records = json((await service.handle({ op: 'audit.list', key: caller, limit: 10 })).body).records as Record<string, unknown>[];
    assert.deepEqual(
      records.map((r) => r.action),
      ['key.revoked', 'key.rotated', 'key.plan_changed', 'key.created', 'key.created'],
    );
    assert.deepEqual(records[2]!.details, { plan: { from: 'default', to: 'enterprise' } });
    assert.deepEqual(records[0]!.actor, { key_id: caller.id, name: 'ops' });
    assert.deepEqual(records[4]!.actor, { key_id: null, name: 'cli' }, 'the key made by KeyAdmin directly counts as the CLI');
  } finally {
    await cleanup();
  }
});

test('a session stands for its key until sign-out, rotation or revocation of that key', async () => {
  const { service, caller, registry, cleanup } = await adminService();
  try {
    const find = async (cookie: string) => {
      const token = cookie.slice(`${SESSION_COOKIE}=`.length, cookie.indexOf(';'));
      return (await service.handle({ op: 'session.find', tokenHash: hashApiKey(token) })).session ?? null;
    };
    const open = async () => (await service.handle({ op: 'session.open', key: caller })).cookie!;
    const first = await open();
    const found = await find(first);
    assert.equal(found?.key.id, caller.id);
    const body = json((await service.handle({ op: 'session.open', key: caller })).body);
    assert.deepEqual(Object.keys(body).sort(), ['csrf_token', 'expires_at', 'key']);

    const token = first.slice(`${SESSION_COOKIE}=`.length, first.indexOf(';'));
    const closed = await service.handle({ op: 'session.close', key: caller, tokenHash: hashApiKey(token) });
    assert.match(closed.cookie!, /Max-Age=0/);
    assert.equal(await find(first), null, 'signed out');

    const second = await open();
    await service.handle({ op: 'keys.rotate', key: caller, id: caller.id });
    assert.equal(registry.records().find((k) => k.id === caller.id)?.hash === caller.hash, false);
    assert.equal(await find(second), null, 'the key was rotated');
  } finally {
    await cleanup();
  }
});

test('a compaction is started on request, once while one runs, and recorded; a follower refuses with 400', async () => {
  let running = false;
  const asked: string[] = [];
  const { service, caller, audit, cleanup } = await adminService((why) => {
    asked.push(why);
    const started = !running;
    running = true;
    return { started, snapshot: '20261126T000000000Z-abcdef' };
  });
  try {
    const first = await service.handle({ op: 'compaction.start', key: caller });
    assert.equal(first.status, 202);
    assert.deepEqual(JSON.parse(first.body), { started: true, snapshot: '20261126T000000000Z-abcdef' });
    assert.deepEqual(JSON.parse((await service.handle({ op: 'compaction.start', key: caller })).body).started, false);
    assert.deepEqual(asked, ['requested by ops', 'requested by ops']);
    const records = await audit.recent(10);
    assert.deepEqual(
      records.filter((r) => r.action === 'compaction.requested').map((r) => [r.actor.name, r.target, r.details]),
      [
        ['ops', '20261126T000000000Z-abcdef', { started: false }],
        ['ops', '20261126T000000000Z-abcdef', { started: true }],
      ],
    );
  } finally {
    await cleanup();
  }
  const follower = await adminService(null);
  try {
    const refused = await follower.service.handle({ op: 'compaction.start', key: follower.caller });
    assert.equal(refused.status, 400);
    assert.equal(JSON.parse(refused.body).error, 'bad_request');
  } finally {
    await follower.cleanup();
  }
});
