import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { hashApiKey } from '../../src/access/api-key.js';
import { FileAuditLog, type AuditEntry, type AuditLog } from '../../src/access/audit-log.js';
import { KeyAdmin } from '../../src/access/key-admin.js';
import { FileKeyBackend } from '../../src/access/key-file.js';
import { tempDataDir } from '../helpers.js';

// Every key change is in the audit log. One whose entry cannot be written
// (a full disk, the store down) is undone and the failure thrown: no key
// active that nobody was given, no holder locked out by a rotation whose
// new secret never reached anyone. A revocation stands all the same, and
// revoking the key again writes the entry that is missing.

test('a key change the audit log cannot take is undone, but a revocation stands', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const backend = new FileKeyBackend(join(root, 'keys.json'));
    const written = new FileAuditLog(join(root, 'audit.ndjson'));
    let failing = false;
    const audit: AuditLog = {
      append: (entry: AuditEntry, now?: Date) => (failing ? Promise.reject(new Error('no space left on device')) : written.append(entry, now)),
      recent: (limit) => written.recent(limit),
      holds: (action, target) => written.holds(action, target),
    };
    const admin = new KeyAdmin(backend, audit);
    const { key, record } = await admin.create({ name: 'bank', plan: 'default' });
    const before = await backend.read();

    failing = true;
    await assert.rejects(admin.create({ name: 'never given' }), /no space left/);
    await assert.rejects(admin.rotate(record.id), /no space left/);
    await assert.rejects(admin.changePlan(record.id, 'gold'), /no space left/);
    assert.deepEqual(await backend.read(), before, 'nothing changed');
    assert.equal((await backend.read())[0]!.hash, hashApiKey(key), 'the holder keeps the secret that works');

    await assert.rejects(admin.revoke(record.id), /no space left/);
    assert.notEqual((await backend.read())[0]!.revoked_at, null, 'a revocation is never undone');

    failing = false;
    assert.deepEqual(
      (await written.recent(10)).map((r) => r.action),
      ['key.created'],
      'the audit log holds what stands, but for the revocation it could not take',
    );

    // Revoking again once the log takes entries writes the one missing, with when the revocation took effect; once.
    const revokedAt = (await backend.read())[0]!.revoked_at;
    await admin.revoke(record.id);
    await admin.revoke(record.id);
    const entries = await written.recent(10);
    assert.deepEqual(entries.map((r) => r.action), ['key.revoked', 'key.created']);
    assert.deepEqual(entries[0]!.details, { revoked_at: revokedAt, recorded_late: true });
    assert.equal((await backend.read())[0]!.revoked_at, revokedAt, 'the revocation keeps its time');
  } finally {
    await cleanup();
  }
});
