import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MALFORMED_QUERY, strictDecode, strictQueryValue } from '../../src/http/strict-query.js';
import uWS from 'uWebSockets.js';
import { listen } from '../../src/http/server.js';
import { get, rawRequest, startEdgeServer, type EdgeServer } from '../raw-http.js';

/**
 * Query strings are decoded strictly: a `%` not followed by two hex digits,
 * or escaped bytes that are not UTF-8, make the request a 400 bad_request,
 * never a lookup of some other VPA (uWS alone decodes `abc%zz%40ybl` as
 * `abcs@ybl`).
 */

/** Percent-encode every UTF-8 byte of `text` for which `pick` says so (hex in either case); the rest as is when it is safe to. */
function encodeSome(text: string, pick: (i: number) => number): string {
  let out = '';
  let i = 0;
  for (const byte of Buffer.from(text, 'utf8')) {
    const choice = pick(i++);
    const safe = byte < 0x80 && /[A-Za-z0-9._~@!$'()*,;:=/?-]/.test(String.fromCharCode(byte));
    if (safe && choice === 0) out += String.fromCharCode(byte);
    else {
      const hex = byte.toString(16).padStart(2, '0');
      out += `%${choice === 2 ? hex.toLowerCase() : hex.toUpperCase()}`;
    }
  }
  return out;
}

const wellFormed = fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => Buffer.from(s, 'utf8').toString('utf8') === s); // no lone surrogates
const picks = fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 8 });

/** Escapes that are malformed on their own, wherever they stand. */
const BAD_ESCAPES = ['%', '%z', '%zz', '%4', '%G0', '%0g', '%%', '%FF', '%80', '%C3', '%C3%28', '%C0%80', '%E2%82', '%ED%A0%80', '%F4%90%80%80', '%F8%88%80%80%80'];

describe('strictDecode and strictQueryValue (properties)', () => {
  test('any well-formed text, percent-encoded byte by byte in any mix and hex case, decodes back to itself', () => {
    fc.assert(
      fc.property(wellFormed, picks, (text, choices) => {
        const encoded = encodeSome(text, (i) => choices[i % choices.length]!);
        assert.equal(strictDecode(encoded), text);
        assert.equal(strictDecode(encodeURIComponent(text)), text);
      }),
      { numRuns: 2000 },
    );
  });

  test('a malformed escape anywhere is refused, alone or among valid ones', () => {
    fc.assert(
      // What follows the bad escape starts with a character that is no hex digit, so it cannot complete it.
      fc.property(wellFormed, wellFormed, fc.constantFrom(...BAD_ESCAPES), fc.constantFrom('x', '@', '-%41', '.%c3%a9'), (left, right, bad, next) => {
        const text = `${encodeURIComponent(left)}${bad}${next}${encodeURIComponent(right)}`;
        assert.equal(strictDecode(text), null, text);
        assert.equal(strictQueryValue(`upi=${text}`, 'upi'), MALFORMED_QUERY);
        assert.equal(strictQueryValue(`other=${text}&upi=a@ybl`, 'upi'), MALFORMED_QUERY);
      }),
      { numRuns: 2000 },
    );
  });

  test('agrees with the ECMAScript decoder on arbitrary strings of escapes, hex digits and text', () => {
    const piece = fc.constantFrom('%', '%4', '%41', '%c3', '%A9', '%ff', '%80', '%e2%82%ac', 'a', 'F', '0', 'z', '@', '+', '&', '=', 'é');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const text = pieces.join('');
        let expected: string | null;
        try {
          expected = decodeURIComponent(text);
        } catch {
          expected = null;
        }
        assert.equal(strictDecode(text), expected);
      }),
      { numRuns: 3000 },
    );
  });

  test('finds the first pair of the key, as sent, and reads "+" as a space', () => {
    assert.equal(strictQueryValue('upi=a%40ybl', 'upi'), 'a@ybl');
    assert.equal(strictQueryValue('x=1&upi=a%2Bb%40ybl&upi=second', 'upi'), 'a+b@ybl');
    assert.equal(strictQueryValue('upi=a+b%40ybl', 'upi'), 'a b@ybl');
    assert.equal(strictQueryValue('%75pi=a%40ybl', 'upi'), undefined);
    assert.equal(strictQueryValue('upix=1&xupi=2&upi', 'upi'), undefined);
    assert.equal(strictQueryValue('upi=&x=%41', 'upi'), '');
    assert.equal(strictQueryValue('upi=a%26b%40ybl', 'upi'), 'a&b@ybl');
  });
});

/**
 * uWS stops at a pair without `=` whose name is a prefix of the key or
 * starts with it (`up&upi=a`, `upix&upi=a` find nothing); the service takes
 * the pair named exactly `upi`. Queries without such a pair are read alike.
 */
test('on queries without "%" it finds what uWS getQuery(key) finds (property, in-process uWS)', async () => {
  const app = uWS.App();
  app.get('/q', (res, req) => {
    // The raw query first: getQuery(key) decodes in place.
    const raw = req.getQuery();
    const ours = raw === undefined ? undefined : strictQueryValue(raw, 'upi');
    const theirs = req.getQuery('upi');
    res.end(JSON.stringify({ ours: ours ?? '<absent>', theirs: theirs ?? '<absent>' }));
  });
  const pair = fc.oneof(
    fc.tuple(fc.constantFrom('upi', 'upi', 'x', 'a', ''), fc.array(fc.constantFrom('a', '@', '.', '+', '++', 'ybl', '-', '_', '=', 'upi'), { maxLength: 5 })).map(([name, value]) => `${name}=${value.join('')}`),
    fc.constantFrom('x', 'a', ''),
  );
  const listening = await listen(app, '127.0.0.1', 0);
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(pair, { maxLength: 5 }), async (pairs) => {
        const query = pairs.join('&');
        const result = await rawRequest(listening.port, [`GET /q?${query} HTTP/1.1\r\nHost: x\r\n\r\n`], { expect: 1 });
        const answer = JSON.parse(result.answers[0]!.body) as { ours: string; theirs: string };
        assert.equal(answer.ours, answer.theirs, query);
      }),
      { numRuns: 300 },
    );
  } finally {
    listening.close();
  }
});

describe('GET /v1/verify/upi over a raw socket', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  const lookup = async (query: string) => {
    const result = await rawRequest(edge.port, [get(`/v1/verify/upi?${query}`, edge.key)], { expect: 1 });
    assert.equal(result.answers.length, 1, `no answer to ${query}`);
    return result.answers[0]!;
  };

  test('a malformed escape is 400 bad_request, never a lookup of another VPA', async () => {
    for (const query of ['upi=abc%zz%40ybl', 'upi=abc%40ybl%', 'upi=abc%4', 'upi=ab%G0c%40ybl', 'upi=abc%ff%40ybl', 'upi=abc%C3%40ybl', 'upi=abc%C0%AE%40ybl', 'upi=abc%ED%A0%80%40ybl']) {
      const answer = await lookup(query);
      assert.equal(answer.status, 400, query);
      assert.equal((JSON.parse(answer.body) as { error: string }).error, 'bad_request', query);
    }
  });

  test('a malformed escape in another parameter is refused too', async () => {
    const answer = await lookup(`x=%zz&upi=${edge.flagged}`);
    assert.equal(answer.status, 400);
    assert.equal((JSON.parse(answer.body) as { error: string }).error, 'bad_request');
  });

  test('valid escapes decode to the VPA sent, in either hex case', async () => {
    const [handle, provider] = edge.flagged.split('@') as [string, string];
    const upper = encodeSome(edge.flagged, () => 1);
    const lower = encodeSome(edge.flagged, () => 2);
    for (const query of [`upi=${handle}%40${provider}`, `upi=${upper}`, `upi=${lower}`, `x=%41&upi=${edge.flagged}`]) {
      const answer = await lookup(query);
      assert.equal(answer.status, 200, `${query}: ${answer.body}`);
      const body = JSON.parse(answer.body) as { upi: string; status: string };
      assert.equal(body.upi, edge.flagged, query);
      assert.equal(body.status, 'FLAGGED', query);
    }
  });

  test('escaped non-ASCII text is decoded, then refused by the VPA grammar', async () => {
    const answer = await lookup('upi=%C3%A9t%C3%A9%40ybl');
    assert.equal(answer.status, 400);
    assert.match(answer.body, /not a valid VPA/);
  });

  test('a query without escapes is read as before', async () => {
    const flagged = JSON.parse((await lookup(`upi=${edge.flagged}`)).body) as { upi: string; status: string };
    assert.deepEqual([flagged.upi, flagged.status], [edge.flagged, 'FLAGGED']);
    assert.equal((await lookup('upi=')).status, 400);
    assert.equal((await lookup('other=1')).status, 400);
  });

  test('the cluster id in the path is not decoded: an escape there is 400 bad_request', async () => {
    for (const path of ['/v1/verify/upi/cluster/MC-%31', '/v1/verify/upi/cluster/MC-%zz', '/v1/verify/upi/cluster/%4D%43-1']) {
      const result = await rawRequest(edge.port, [get(path, edge.key)], { expect: 1 });
      assert.equal(result.answers[0]?.status, 400, path);
      assert.equal((JSON.parse(result.answers[0]!.body) as { error: string }).error, 'bad_request');
    }
  });

  test('a refused query leaves the connection serving: pipelined lookups behind it are answered', async () => {
    const requests = [get('/v1/verify/upi?upi=abc%zz%40ybl', edge.key), get(`/v1/verify/upi?upi=${encodeURIComponent(edge.flagged)}`, edge.key)];
    const result = await rawRequest(edge.port, [requests.join('')], { expect: 2 });
    assert.deepEqual(result.answers.map((a) => a.status), [400, 200]);
    assert.equal((JSON.parse(result.answers[1]!.body) as { upi: string }).upi, edge.flagged);
  });
});
