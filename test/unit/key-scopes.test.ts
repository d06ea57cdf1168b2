import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_SCOPES, parseScopes, readKeyRecords } from '../../src/access/key-record.js';

const stored = {
  id: 'key_0123456789ab',
  name: 'n',
  plan: 'default',
  limits: null,
  created_at: '2026-01-01T00:00:00Z',
  rotated_at: null,
  revoked_at: null,
  hash: 'a'.repeat(64),
};
const fail = (why: string) => new Error(why);

test('a key stored before keys had scopes screens, as it always did', () => {
  assert.deepEqual(readKeyRecords([stored], fail)[0]!.scopes, DEFAULT_SCOPES);
  assert.deepEqual(readKeyRecords([{ ...stored, scopes: ['ingest', 'admin'] }], fail)[0]!.scopes, ['ingest', 'admin']);
});

test('stored scopes that are empty, unknown, repeated or not a list are refused', () => {
  for (const scopes of [[], ['screen', 'screen'], ['root'], 'screen', [1], null]) {
    assert.throws(() => readKeyRecords([{ ...stored, scopes }], fail), /scopes/, JSON.stringify(scopes));
  }
});

test('scopes given as a list come out once each, in a fixed order', () => {
  assert.deepEqual(parseScopes('admin,screen', fail), ['screen', 'admin']);
  assert.deepEqual(parseScopes(' ingest , ingest', fail), ['ingest']);
  for (const bad of ['', 'screen,', 'Screen', 'screen;ingest']) assert.throws(() => parseScopes(bad, fail), /scope/, bad);
});
