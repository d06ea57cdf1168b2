import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyRegistry } from '../../src/access/key-registry.js';
import { hashApiKey } from '../../src/access/api-key.js';
import type { KeyBackend, KeyRecord } from '../../src/access/key-record.js';

const record = (id: string, key: string): KeyRecord => ({
  id,
  name: id,
  plan: 'default',
  scopes: ['screen'],
  limits: null,
  created_at: '2026-11-26T00:00:00.000Z',
  rotated_at: null,
  revoked_at: null,
  hash: hashApiKey(key),
});

/** A backend whose version() answers only when released, so a look can be held mid-way. */
class HeldBackend implements KeyBackend {
  readonly description = 'held';
  keys: KeyRecord[] = [];
  version_ = 0;
  #release: (() => void)[] = [];
  hold = false;
  async read(): Promise<KeyRecord[]> {
    return this.keys;
  }
  async update<T>(): Promise<T> {
    throw new Error('not used');
  }
  async version(): Promise<string> {
    const v = String(this.version_);
    if (this.hold) await new Promise<void>((resolve) => this.#release.push(resolve));
    return v;
  }
  release(): void {
    for (const r of this.#release.splice(0)) r();
  }
}

test('a check asked for while a look runs resolves only after a look that saw the change', async () => {
  const backend = new HeldBackend();
  const registry = new KeyRegistry(backend);
  await registry.load();
  backend.hold = true;
  // A look (a poll, say) reads the version before the change...
  const running = registry.check();
  await new Promise((resolve) => setImmediate(resolve));
  // ...then a key is made, and the change asks for a check.
  backend.keys = [record('key_aaaaaaaaaaaa', 'upirisk_new')];
  backend.version_ = 1;
  const afterChange = registry.check();
  const alsoAfter = registry.check();
  backend.hold = false;
  backend.release();
  await running;
  await afterChange;
  assert.notEqual(registry.verify('upirisk_new'), null, 'the new key is in force once the check resolves');
  assert.equal(afterChange, alsoAfter, 'checks asked for meanwhile share one look');
});
