import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_TRACKED_BYTES, oversizedFiles } from '../../scripts/check-file-sizes.js';

function repository(): string {
  const root = mkdtempSync(join(tmpdir(), 'upi-risk-sizes-'));
  execFileSync('git', ['init', '-q'], { cwd: root });
  return root;
}

test('a tracked file over 2 MiB is reported; one at the limit and untracked ones are not', (t) => {
  const root = repository();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'small.txt'), 'ok\n');
  writeFileSync(join(root, 'at-limit.bin'), Buffer.alloc(MAX_TRACKED_BYTES));
  writeFileSync(join(root, 'core'), Buffer.alloc(MAX_TRACKED_BYTES + 1));
  writeFileSync(join(root, 'untracked.bin'), Buffer.alloc(MAX_TRACKED_BYTES * 2));
  execFileSync('git', ['add', 'small.txt', 'at-limit.bin', 'core'], { cwd: root });
  assert.deepEqual(oversizedFiles(root), [{ path: 'core', bytes: MAX_TRACKED_BYTES + 1 }]);
});

test('a staged file deleted from the work tree still counts by its staged size', (t) => {
  const root = repository();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'dump'), Buffer.alloc(MAX_TRACKED_BYTES + 10));
  execFileSync('git', ['add', 'dump'], { cwd: root });
  rmSync(join(root, 'dump'));
  assert.deepEqual(oversizedFiles(root), [{ path: 'dump', bytes: MAX_TRACKED_BYTES + 10 }]);
});

test('this repository tracks no file over the limit', () => {
  assert.deepEqual(oversizedFiles(join(import.meta.dirname, '..', '..', '..')), []);
});
