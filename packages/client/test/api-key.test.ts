/**
 * The API key: one that cannot go in a header (a line break read from a
 * file with it, a space, a control character) is refused at construction,
 * and no error message ever quotes it. A request fetch refuses to make is
 * not taken for a lost connection and retried.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskClient } from '../src/client.js';
import { NetworkError } from '../src/errors.js';
import { UpiRiskMirror } from '../src/mirror.js';
import type { FetchLike } from '../src/transport.js';
import { BASE_URL, fakeClock } from './fakes.js';
import { ed25519Keys } from './mirror-fakes.js';

const SECRET = 'upirisk_live_4f9c2e7a';

test('a key that cannot go in a header is a TypeError at construction, naming apiKey but not quoting the key', () => {
  const publicKey = ed25519Keys().publicKey;
  for (const apiKey of [`${SECRET}\n`, `${SECRET}\r\n`, ` ${SECRET}`, `${SECRET} x`, `${SECRET}\t`, `${SECRET}\u0000`, `${SECRET}\u007f`, `${SECRET}é`]) {
    for (const construct of [() => new UpiRiskClient({ baseUrl: BASE_URL, apiKey }), () => new UpiRiskMirror({ baseUrl: BASE_URL, apiKey, publicKey })]) {
      assert.throws(construct, (error: unknown) => {
        assert.ok(error instanceof TypeError, JSON.stringify(apiKey));
        assert.match(error.message, /apiKey/);
        assert.ok(!error.message.includes(SECRET), error.message);
        return true;
      });
    }
  }
  assert.doesNotThrow(() => new UpiRiskClient({ baseUrl: BASE_URL, apiKey: `${SECRET}-._~+/=` }));
});

test('a request fetch refuses to make is a TypeError, sent once and not retried as a NetworkError', async () => {
  const clock = fakeClock();
  let calls = 0;
  // The platform's fetch, which refuses a URL with credentials before sending anything.
  const fetch: FetchLike = (url, init) => {
    calls++;
    return globalThis.fetch(url, init);
  };
  const client = new UpiRiskClient({ baseUrl: 'http://user:password@127.0.0.1:9', apiKey: SECRET, fetch, now: clock.now, sleep: clock.sleep });
  const error = await client.verify('a@ybl').then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(error instanceof TypeError && !(error instanceof NetworkError), String(error));
  assert.ok(!error.message.includes(SECRET), error.message);
  assert.equal(calls, 1);
  assert.deepEqual(clock.delays, []);
});

test('a network failure whose message quotes the key: NetworkError, the key not in its message', async () => {
  const clock = fakeClock();
  const fetch: FetchLike = (_, init) =>
    Promise.reject(new TypeError('fetch failed', { cause: new Error(`proxy refused the header "${init.headers.authorization}"`) }));
  const client = new UpiRiskClient({ baseUrl: BASE_URL, apiKey: SECRET, fetch, now: clock.now, sleep: clock.sleep });
  const error = await client.verify('a@ybl').then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(error instanceof NetworkError);
  assert.ok(!error.message.includes(SECRET), error.message);
  assert.match(error.message, /proxy refused the header/);
});
