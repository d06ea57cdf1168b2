import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CLI_ACTOR, FileAuditLog, type AuditEntry } from '../../src/access/audit-log.js';
import { ErrorCode } from '../../src/common/errors.js';
import { tempDataDir } from '../helpers.js';

const entry = (target: string): AuditEntry => ({ actor: { key_id: 'key_0123456789ab', name: 'ops' }, action: 'key.created', target, details: { plan: 'default' } });

test('records come back newest first, as many as asked', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const log = new FileAuditLog(join(root, 'audit.ndjson'));
    await Promise.all([log.append(entry('key_000000000001')), log.append(entry('key_000000000002'))]);
    await log.append({ actor: CLI_ACTOR, action: 'key.revoked', target: 'key_000000000003', details: {} });
    const recent = await log.recent(2);
    assert.deepEqual(recent.map((r) => r.target), ['key_000000000003', 'key_000000000002']);
    assert.deepEqual(recent[0]!.actor, { key_id: null, name: 'cli' });
    assert.equal((await log.recent(10)).length, 3);
    // Concurrent appends never share a line.
    assert.equal((await readFile(join(root, 'audit.ndjson'), 'utf8')).split('\n').length, 4);
  } finally {
    await cleanup();
  }
});

test('a missing log is empty; a last line cut short by a crash is skipped', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'audit.ndjson');
    const log = new FileAuditLog(path);
    assert.deepEqual(await log.recent(5), []);
    await log.append(entry('key_000000000001'));
    await appendFile(path, '{"id":"aud_00');
    assert.deepEqual((await log.recent(5)).map((r) => r.target), ['key_000000000001']);
  } finally {
    await cleanup();
  }
});

test('a line this service did not write is ERR_ADMIN_STATE, naming the line', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'audit.ndjson');
    const log = new FileAuditLog(path);
    await log.append(entry('key_000000000001'));
    for (const bad of ['not json', '{"id":"aud_0000000000000000","at":"yesterday"}', '[]']) {
      await writeFile(path, `${bad}\n`);
      await assert.rejects(log.recent(5), (error: Error & { code?: string }) => error.code === ErrorCode.ADMIN_STATE && /line 1/.test(error.message));
    }
  } finally {
    await cleanup();
  }
});
