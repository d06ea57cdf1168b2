import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AnswerHead, snapshotHeaderLines, type RateLimitHeaders } from '../../src/http/answer-headers.js';
import { RequestIds } from '../../src/http/request-ids.js';

// An answer head steps the digits of the answer before it where it can
// (AnswerHead.lines): whatever the sequence of answers, each one's lines
// must be what writing them afresh gives.

const ids = new RequestIds();
const snapshots = [snapshotHeaderLines('20261128T000000000Z-000001+3', '2026-11-28T00:00:00.000Z'), snapshotHeaderLines('20261128T000000000Z-000002', '2026-11-28T00:00:01.000Z')];

/** The lines written afresh, by a head that has written nothing before. */
function fresh(snapshot: number, n: number, rateLimit: RateLimitHeaders | null, extra: readonly [string, string] | null): string {
  const head = new AnswerHead(ids);
  return Buffer.from(head.lines(snapshots[snapshot]!, n, rateLimit, extra ?? undefined)).toString('latin1');
}

/** One answer after another: mostly the next request of the same key, its remaining count one down or the same; sometimes anything else. */
const step = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('next' as const), down: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('other' as const),
      snapshot: fc.integer({ min: 0, max: 1 }),
      skip: fc.integer({ min: 0, max: 3 }),
      limit: fc.constantFrom(10, 100, 1000),
      remaining: fc.oneof(fc.constantFrom(0, 1, 9, 10, 11, 99, 100, 101, 1000), fc.nat(5000)),
      reset: fc.constantFrom(1, 59, 60, 1_764_288_000),
      noQuota: fc.boolean(),
      extra: fc.option(fc.constantFrom<readonly [string, string]>(['Retry-After', '3'], ['WWW-Authenticate', 'Bearer']), { freq: 3 }),
    }),
  },
);

test('lines stepped from the answer before are the lines written afresh, for any sequence of answers (property)', () => {
  fc.assert(
    fc.property(
      // Request numbers near where base-36 numbers gain a digit, and remaining counts near a power of ten.
      fc.constantFrom(0, 34, 35, 36, 1294, 1295, 46_655, 1_000_000, 2_176_782_334),
      fc.constantFrom(0, 1, 9, 10, 11, 100, 101, 1001, 10_000),
      fc.array(step, { minLength: 1, maxLength: 60 }),
      (start, startRemaining, steps) => {
        const head = new AnswerHead(ids);
        let snapshot = 0;
        let n = start;
        let rateLimit: RateLimitHeaders | null = { limit: 100_000, remaining: startRemaining, reset: 60 };
        let extra: readonly [string, string] | null = null;
        for (const s of steps) {
          if (s.kind === 'next') {
            n++;
            if (rateLimit !== null) rateLimit = { ...rateLimit, remaining: Math.max(0, rateLimit.remaining - (s.down ? 1 : 0)) };
            extra = null;
          } else {
            snapshot = s.snapshot;
            n += s.skip;
            rateLimit = s.noQuota ? null : { limit: s.limit, remaining: s.remaining, reset: s.reset };
            extra = s.extra;
          }
          const written = Buffer.from(head.lines(snapshots[snapshot]!, n, rateLimit, extra ?? undefined)).toString('latin1');
          assert.equal(written, fresh(snapshot, n, rateLimit, extra), `request ${n}, ${JSON.stringify(rateLimit)}`);
        }
      },
    ),
    { numRuns: 400 },
  );
});

test('a run of one key\'s answers counts its request ids up and its remaining count down, digit lengths changing on the way', () => {
  const head = new AnswerHead(ids);
  let remaining = 1001;
  for (let n = 1290; n < 1300; n++, remaining--) {
    const written = Buffer.from(head.lines(snapshots[0]!, n, { limit: 5000, remaining, reset: 42 })).toString('latin1');
    assert.ok(written.includes(`\r\nX-Request-Id: ${ids.text(n)}\r\n`), written);
    assert.ok(written.includes(`\r\nX-RateLimit-Remaining: ${remaining}\r\n`), written);
    assert.ok(written.endsWith('\r\nX-RateLimit-Reset: 42'), written);
  }
});
