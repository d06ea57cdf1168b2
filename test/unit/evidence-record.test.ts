import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isValidVpa, MAX_HANDLE_LENGTH } from '../../src/vpa/vpa.js';
import { parseEvidenceLine, validateEvidence } from '../../src/evidence/record.js';
import { parseIsoWithZone, formatIso, putIso, MAX_ISO_LENGTH } from '../../src/common/time.js';
import { hasLoneSurrogate } from '../../src/common/control-characters.js';

// The grammar written as a regular expression: the reference the hand-written validator is checked against.
const VPA_GRAMMAR = /^[A-Za-z0-9._-]{1,256}@[A-Za-z][A-Za-z0-9]{1,63}$/;

test('VPA validator agrees with the grammar on arbitrary strings (property)', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 40 }), (s) => assert.equal(isValidVpa(s), VPA_GRAMMAR.test(s), JSON.stringify(s))),
    { numRuns: 3000 },
  );
  const handleChars = fc.constantFrom(...'abcXYZ019._-'.split(''));
  const providerChars = fc.constantFrom(...'aZk09'.split(''));
  const shaped = fc
    .tuple(
      fc.array(handleChars, { minLength: 0, maxLength: 260 }),
      fc.constantFrom('', '@', '@@'),
      fc.array(fc.oneof(providerChars, fc.constantFrom('-', '.', 'é')), { minLength: 0, maxLength: 66 }),
    )
    .map(([h, at, p]) => h.join('') + at + p.join(''));
  fc.assert(fc.property(shaped, (s) => assert.equal(isValidVpa(s), VPA_GRAMMAR.test(s), s)), { numRuns: 3000 });
});

test('VPA edge cases', () => {
  assert.equal(isValidVpa('a@bc'), true);
  assert.equal(isValidVpa(`${'a'.repeat(MAX_HANDLE_LENGTH)}@ybl`), true);
  assert.equal(isValidVpa(`${'a'.repeat(MAX_HANDLE_LENGTH + 1)}@ybl`), false);
  assert.equal(isValidVpa(`a@${'b'.repeat(64)}`), true);
  assert.equal(isValidVpa(`a@${'b'.repeat(65)}`), false);
  assert.equal(isValidVpa('a@b'), false);
  assert.equal(isValidVpa('a@1bc'), false);
  assert.equal(isValidVpa('9876543210@ybl'), true);
  assert.equal(isValidVpa('ｆｕｌｌ@ybl'), false);
  assert.equal(isValidVpa('a b@ybl'), false);
});

test('timestamps need a zone; impossible dates are refused; output is UTC', () => {
  assert.equal(formatIso(parseIsoWithZone('2026-03-01T12:00:00+05:30')), '2026-03-01T06:30:00Z');
  assert.equal(formatIso(parseIsoWithZone('2026-03-01T12:00:00.5-0800')), '2026-03-01T20:00:00.500Z');
  assert.equal(formatIso(parseIsoWithZone('2026-03-01T12:00Z')), '2026-03-01T12:00:00Z');
  assert.equal(formatIso(parseIsoWithZone('2024-02-29T00:00:00+14:00')), '2024-02-28T10:00:00Z');
  for (const bad of ['2026-03-01T12:00:00', '2026-03-01', '2023-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-01-01T24:00:00Z', 'yesterday', '']) {
    assert.ok(Number.isNaN(parseIsoWithZone(bad)), bad);
  }
  // Instants whose UTC year is not four digits would be written back as +010000 or -000001: not RFC 3339.
  for (const beyond of ['0000-01-01T00:00:00+01:00', '0000-01-01T00:59:59.999+01:00', '9999-12-31T23:59:59-00:01', '9999-12-31T23:30:00-01:00']) {
    assert.ok(Number.isNaN(parseIsoWithZone(beyond)), beyond);
  }
  assert.equal(formatIso(parseIsoWithZone('0000-01-01T01:00:00+01:00')), '0000-01-01T00:00:00Z');
  assert.equal(formatIso(parseIsoWithZone('9999-12-31T23:59:59.999Z')), '9999-12-31T23:59:59.999Z');
  assert.equal(formatIso(parseIsoWithZone('9999-12-31T23:59:59-00:00')), '9999-12-31T23:59:59Z');
  // Whatever is accepted is written back as text that is accepted again, the same instant.
  fc.assert(
    fc.property(fc.date({ min: new Date(-62_167_219_200_000 - 86_400_000), max: new Date(253_402_300_799_999 + 86_400_000), noInvalidDate: true }), fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }), (date, offset) => {
      const local = new Date(date.getTime() + offset * 60_000).toISOString().slice(0, 23);
      if (!/^\d{4}-/.test(local)) return;
      const zone = `${offset < 0 ? '-' : '+'}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
      const ms = parseIsoWithZone(local + zone);
      if (Number.isNaN(ms)) return;
      assert.equal(parseIsoWithZone(formatIso(ms)), ms, local + zone);
    }),
    { numRuns: 5_000 },
  );
});

test('formatIso and putIso write what Date#toISOString writes, without the fraction on whole seconds', () => {
  const viaDate = (ms: number) => {
    const iso = new Date(ms).toISOString();
    return iso.endsWith('.000Z') ? `${iso.slice(0, -5)}Z` : iso;
  };
  const target = new Uint8Array(3 + MAX_ISO_LENGTH);
  // Put after other text, as in an answer, and never longer than MAX_ISO_LENGTH.
  const viaBytes = (ms: number) => Buffer.from(target.subarray(3, putIso(target, 3, ms))).toString('latin1');
  const edges = [
    0, 999, 951_782_400_000 /* 2000-02-29 */, 4_107_542_400_000 /* 2100-03-01 */, 1_709_164_800_000 /* 2024-02-29 */,
    253_402_300_799_999 /* 9999-12-31T23:59:59.999 */, 253_402_300_800_000 /* year 10000 */, -1, -62_167_219_200_000 /* year 0 */,
    0.5 /* not whole */, 8.64e15 /* Date's last day */, -8.64e15,
  ];
  for (const ms of edges) {
    assert.equal(formatIso(ms), viaDate(ms), String(ms));
    assert.equal(viaBytes(ms), viaDate(ms), String(ms));
  }
  fc.assert(
    fc.property(fc.integer({ min: -62_167_219_200_000, max: 300_000_000_000_000 }), (ms) => formatIso(ms) === viaDate(ms) && viaBytes(ms) === viaDate(ms)),
    { numRuns: 20_000 },
  );
});

test('defaults: risk category from the source category, screenshot false, VPA lower-cased', () => {
  const base = { evidence_id: 'e', upi: 'MiXeD@Ybl', url: 'https://u', captured_at: '2026-01-01T00:00:00Z' };
  const expected: Record<string, string> = { gambling: 'gambling', phishing: 'phishing', scam: 'scam', telegram: 'scam' };
  for (const [source, risk] of Object.entries(expected)) {
    const r = validateEvidence({ ...base, source_category: source });
    assert.ok(r.ok);
    assert.equal(r.record.riskCategory, ['mule', 'gambling', 'phishing', 'scam', 'nbfc_impersonation'].indexOf(risk));
    assert.equal(r.record.upi, 'mixed@ybl');
    assert.equal(r.record.screenshot, false);
  }
});

test('the line parser never throws, whatever it is given (property)', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.json(), fc.jsonValue().map((v) => JSON.stringify(v))), (line) => {
      const result = parseEvidenceLine(line);
      assert.equal(typeof result.ok, 'boolean');
      if (!result.ok) assert.ok(result.reason.length > 0);
    }),
    { numRuns: 2000 },
  );
  assert.equal(parseEvidenceLine('x'.repeat(20_000)).ok, false);
});

test('the ISO parser agrees with Date.parse on every valid zoned timestamp (property)', () => {
  const pad = (n: number, w: number) => String(n).padStart(w, '0');
  const stamp = fc.record({
    ms: fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2099, 11, 31) }),
    offset: fc.integer({ min: -14 * 60, max: 14 * 60 }),
    style: fc.constantFrom('Z', 'colon', 'compact', 'hours'),
    fraction: fc.constantFrom(0, 1, 3, 6),
  });
  fc.assert(
    fc.property(stamp, ({ ms, offset, style, fraction }) => {
      const zoneMinutes = style === 'hours' ? Math.trunc(offset / 60) * 60 : style === 'Z' ? 0 : offset;
      const local = new Date(ms + zoneMinutes * 60_000);
      const sign = zoneMinutes < 0 ? '-' : '+';
      const hh = pad(Math.trunc(Math.abs(zoneMinutes) / 60), 2);
      const mm = pad(Math.abs(zoneMinutes) % 60, 2);
      const zone = style === 'Z' ? 'Z' : style === 'colon' ? `${sign}${hh}:${mm}` : style === 'compact' ? `${sign}${hh}${mm}` : `${sign}${hh}`;
      const frac = fraction === 0 ? '' : `.${pad(local.getUTCMilliseconds(), 3).padEnd(fraction, '0').slice(0, fraction)}`;
      const text =
        `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1, 2)}-${pad(local.getUTCDate(), 2)}` +
        `T${pad(local.getUTCHours(), 2)}:${pad(local.getUTCMinutes(), 2)}:${pad(local.getUTCSeconds(), 2)}${frac}${zone}`;
      const isoForDate = style === 'compact' || style === 'hours' ? text.replace(/([+-]\d{2})(\d{2})?$/, (_, h, m) => `${h}:${m ?? '00'}`) : text;
      assert.equal(parseIsoWithZone(text), Date.parse(isoForDate), text);
    }),
    { numRuns: 3000 },
  );
});

test('an evidence id or url with half of a surrogate pair alone is refused: stored as UTF-8, it would become another id', () => {
  const base = { evidence_id: 'e', upi: 'a@ybl', url: 'https://u.example/', source_category: 'scam', captured_at: '2026-01-01T00:00:00Z' };
  for (const lone of ['a\ud800', 'a\udbff', '\udc00a', 'x\udfff\ud800y']) {
    for (const field of ['evidence_id', 'url'] as const) {
      const r = validateEvidence({ ...base, [field]: lone });
      assert.ok(!r.ok && r.reason.includes('well-formed Unicode'), `${field} ${JSON.stringify(lone)}`);
    }
  }
  // A line stored before the rule (read again by a build) is held to the rules it was taken under.
  const storedLine = JSON.stringify({ ...base, evidence_id: 'a\ud800' });
  assert.ok(!parseEvidenceLine(storedLine).ok);
  assert.ok(parseEvidenceLine(storedLine, true).ok);
  // A pair is a character like any other.
  assert.ok(validateEvidence({ ...base, evidence_id: 'ev-\ud83d\ude00', url: 'https://t.me/\ud83d\ude00' }).ok);
  // The same judgement as the platform's, on any text.
  const wellFormed = (s: string) => (s as unknown as { isWellFormed(): boolean }).isWellFormed();
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom('a', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d', '\ude00') }), (s) => {
      assert.equal(hasLoneSurrogate(s), !wellFormed(s), JSON.stringify(s));
    }),
    { numRuns: 5_000 },
  );
});
