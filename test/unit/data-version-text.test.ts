import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dataVersion } from '../../src/engine/delta-data.js';
import { parseDataVersion } from '../../src/history/served-versions.js';
import { newSnapshotId } from '../../src/engine/snapshot-files.js';
import { mulberry32 } from '../fixtures/random.js';

test('every version a server writes reads back as its snapshot and position', () => {
  const random = mulberry32(41);
  for (let i = 0; i < 5000; i++) {
    const snapshot = newSnapshotId(Date.UTC(2020, 0, 1) + Math.floor(random() * 1e12));
    const position = random() < 0.2 ? 0 : 1 + Math.floor(random() * (random() < 0.5 ? 1e4 : Number.MAX_SAFE_INTEGER - 1));
    assert.deepEqual(parseDataVersion(dataVersion(snapshot, position)), { snapshot, position });
  }
});

test('a version is a visible ASCII id of 1 to 64 characters, then "+" and a position when it has one; anything else is refused', () => {
  const random = mulberry32(42);
  for (let i = 0; i < 5000; i++) {
    const length = 1 + Math.floor(random() * 70);
    const text = Array.from({ length }, () => String.fromCharCode(0x20 + Math.floor(random() * 0x60))).join('');
    const parsed = parseDataVersion(text);
    const plus = text.lastIndexOf('+');
    const id = plus < 0 ? text : text.slice(0, plus);
    const expected = /^[\x21-\x7e]{1,64}$/.test(id) && (plus < 0 || /^[1-9][0-9]{0,15}$/.test(text.slice(plus + 1)));
    assert.equal(parsed !== null, expected, JSON.stringify(text));
    if (parsed !== null) assert.equal(dataVersion(parsed.snapshot, parsed.position), text, 'read back, written the same');
  }
  for (const bad of ['', ' ', 'a b', 'x'.repeat(65), `${'x'.repeat(65)}+3`, 'snap+0', 'snap+01', 'snap+', '+5', 'snap+99999999999999999', 'snap+1e3', 'é', '\n']) {
    assert.equal(parseDataVersion(bad), null, JSON.stringify(bad));
  }
  assert.deepEqual(parseDataVersion('a+b+7'), { snapshot: 'a+b', position: 7 });
});
