import { putAscii } from './byte-scratch.js';

/**
 * Timestamps travel as ISO 8601 text with an explicit zone and live in the
 * engine as epoch milliseconds (UTC). Output is always UTC with a `Z`.
 */

/**
 * Parse an ISO 8601 timestamp that names its zone:
 * `YYYY-MM-DD[T ]hh:mm[:ss[.fraction]](Z|±hh[:mm]|±hhmm)`. Returns epoch ms,
 * or NaN when the text is not such a timestamp or names an impossible date
 * (Feb 30, hour 25): `Date.parse` alone would roll those over silently.
 *
 * Hand-written over char codes because the build parses one per evidence
 * line (tens of millions); it allocates nothing.
 */
export function parseIsoWithZone(text: string): number {
  const length = text.length;
  if (length < 17) return Number.NaN;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0) return Number.NaN;
  if (text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH || text.charCodeAt(13) !== COLON) return Number.NaN;
  const separator = text.charCodeAt(10);
  if (separator !== 0x54 /* T */ && separator !== 0x74 /* t */ && separator !== 0x20 /* space */) return Number.NaN;

  let at = 16;
  let second = 0;
  let millis = 0;
  if (text.charCodeAt(at) === COLON) {
    second = digits(text, at + 1, 2);
    if (second < 0) return Number.NaN;
    at += 3;
    const mark = text.charCodeAt(at);
    if (mark === 0x2e /* . */ || mark === 0x2c /* , */) {
      at++;
      const start = at;
      let scale = 100;
      while (at < length && isDigit(text.charCodeAt(at))) {
        millis += (text.charCodeAt(at) - ZERO) * scale;
        scale /= 10;
        at++;
      }
      const count = at - start;
      if (count < 1 || count > 9) return Number.NaN;
      millis = Math.floor(millis);
    }
  }

  // Zone.
  let offsetMinutes = 0;
  const zone = text.charCodeAt(at);
  if (zone === 0x5a /* Z */ || zone === 0x7a /* z */) {
    at++;
  } else if (zone === 0x2b /* + */ || zone === DASH) {
    const zoneHours = digits(text, at + 1, 2);
    if (zoneHours < 0) return Number.NaN;
    at += 3;
    let zoneMinutes = 0;
    if (at < length) {
      if (text.charCodeAt(at) === COLON) at++;
      zoneMinutes = digits(text, at, 2);
      if (zoneMinutes < 0) return Number.NaN;
      at += 2;
    }
    if (zoneHours > 23 || zoneMinutes > 59) return Number.NaN;
    offsetMinutes = (zone === DASH ? -1 : 1) * (zoneHours * 60 + zoneMinutes);
  } else {
    return Number.NaN;
  }
  if (at !== length) return Number.NaN;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return Number.NaN;
  if (hour > 23 || minute > 59 || second > 59) return Number.NaN;
  const days = daysFromCivil(year, month, day);
  const ms = ((days * 24 + hour) * 60 + minute - offsetMinutes) * 60_000 + second * 1000 + millis;
  // An offset may carry a four-digit year past either end in UTC, which is then written with six digits and a sign:
  // not RFC 3339, and refused when read back. Such an instant is refused here, where it comes in.
  return ms < FIRST_FOUR_DIGIT_MS || ms > LAST_FOUR_DIGIT_MS ? Number.NaN : ms;
}

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the instants RFC 3339 can write in UTC. */
const FIRST_FOUR_DIGIT_MS = -62_167_219_200_000;
const LAST_FOUR_DIGIT_MS = 253_402_300_799_999;

const ZERO = 0x30;
const DASH = 0x2d;
const COLON = 0x3a;

function isDigit(code: number): boolean {
  return code >= ZERO && code <= ZERO + 9;
}

/** The decimal value of `count` digits at `at`, or -1 if any is not a digit. */
function digits(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const code = text.charCodeAt(i);
    if (!isDigit(code)) return -1;
    value = value * 10 + (code - ZERO);
  }
  return value;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Two-digit text of 0..99, and the fraction text `.mmm` of 0..999 ms. */
const TWO_DIGITS = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, '0'));
const FRACTIONS = Array.from({ length: 1000 }, (_, n) => `.${String(n).padStart(3, '0')}`);
const MS_PER_DAY = 86_400_000;
/** Year, month, day, hours, minutes, seconds and ms of the last split: one array, so splitting allocates nothing. */
const PARTS = new Int32Array(7);
/** 10000-01-01T00:00:00Z: past it `toISOString` writes six-digit years. */
const FOUR_DIGIT_YEARS_END = 253_402_300_800_000;

/**
 * Epoch ms to ISO 8601 UTC (`2026-01-02T03:04:05.678Z`); whole seconds drop
 * the fraction. A flagged verdict carries several timestamps, and
 * `Date#toISOString` was a measurable share of answering one, so years
 * 1970-9999 are written from integer arithmetic and small tables (the same
 * text, a test compares them); anything else goes through Date.
 */
export function formatIso(ms: number): string {
  if (!isFourDigitYearMs(ms)) return isoViaDate(ms);
  const intoDay = splitDate(ms);
  return `${PARTS[0]!}-${TWO_DIGITS[PARTS[1]!]!}-${TWO_DIGITS[PARTS[2]!]!}T${formatClock(intoDay, intoDay % 1000 !== 0)}Z`;
}

/** `HH:MM:SS`, or `HH:MM:SS.mmm` with `withMillis`, of a whole number of ms into a day. */
export function formatClock(intoDay: number, withMillis: boolean): string {
  splitClock(intoDay);
  const clock = `${TWO_DIGITS[PARTS[3]!]!}:${TWO_DIGITS[PARTS[4]!]!}:${TWO_DIGITS[PARTS[5]!]!}`;
  return withMillis ? clock + FRACTIONS[PARTS[6]!]! : clock;
}

/** The longest text formatIso writes: a six-digit year with its sign and a fraction, `+275760-09-12T23:59:59.999Z`. */
export const MAX_ISO_LENGTH = 27;

/**
 * `formatIso(ms)` as bytes, put into `target` at `at` (the `put*` way of
 * byte-scratch.ts): the same text, written digit by digit with no string
 * made for years 1970-9999. Returns where it stopped.
 */
export function putIso(target: Uint8Array, at: number, ms: number): number {
  if (!isFourDigitYearMs(ms)) return putAscii(target, at, isoViaDate(ms));
  const days = Math.floor(ms / MS_PER_DAY);
  const slot = days & (DATE_SLOTS - 1);
  const cached = slot * DATE_LENGTH;
  if (slotDay[slot] !== days) {
    splitDate(ms);
    const year = PARTS[0]!;
    const century = (year / 100) | 0;
    put2(slotDate, cached, century);
    put2(slotDate, cached + 2, year - century * 100);
    slotDate[cached + 4] = DASH_BYTE;
    put2(slotDate, cached + 5, PARTS[1]!);
    slotDate[cached + 7] = DASH_BYTE;
    put2(slotDate, cached + 8, PARTS[2]!);
    slotDay[slot] = days;
  }
  for (let i = 0; i < DATE_LENGTH; i++) target[at + i] = slotDate[cached + i]!;
  target[at + 10] = T_BYTE;
  splitClock(ms - days * MS_PER_DAY);
  const millis = PARTS[6]!;
  put2(target, at + 11, PARTS[3]!);
  target[at + 13] = COLON_BYTE;
  put2(target, at + 14, PARTS[4]!);
  target[at + 16] = COLON_BYTE;
  put2(target, at + 17, PARTS[5]!);
  let end = at + 19;
  if (millis !== 0) {
    const hundreds = (millis / 100) | 0;
    target[end] = DOT_BYTE;
    target[end + 1] = ZERO + hundreds;
    put2(target, end + 2, millis - hundreds * 100);
    end += 4;
  }
  target[end] = Z_BYTE;
  return end + 1;
}

/**
 * `YYYY-MM-DD` of the days putIso wrote last, by day number modulo
 * DATE_SLOTS: the timestamps of answers fall on a few hundred days, and a
 * date copied from here costs a tenth of one worked out again.
 */
const DATE_SLOTS = 4096;
const DATE_LENGTH = 10;
const slotDay = new Int32Array(DATE_SLOTS).fill(-1);
const slotDate = new Uint8Array(DATE_SLOTS * DATE_LENGTH);

/** Two decimal digits of 0..99. */
function put2(target: Uint8Array, at: number, n: number): void {
  const tens = (n / 10) | 0;
  target[at] = ZERO + tens;
  target[at + 1] = ZERO + n - tens * 10;
}

const DASH_BYTE = 0x2d;
const COLON_BYTE = 0x3a;
const T_BYTE = 0x54;
const Z_BYTE = 0x5a;
const DOT_BYTE = 0x2e;

function isFourDigitYearMs(ms: number): boolean {
  return ms >= 0 && ms < FOUR_DIGIT_YEARS_END && Number.isInteger(ms);
}

function isoViaDate(ms: number): string {
  const iso = new Date(ms).toISOString();
  return iso.endsWith('.000Z') ? `${iso.slice(0, -5)}Z` : iso;
}

/** Fill PARTS' year, month and day with the UTC date of whole `ms` ≥ 0; returns the ms into that day. */
function splitDate(ms: number): number {
  const days = Math.floor(ms / MS_PER_DAY);
  // H. Hinnant's civil_from_days, for days ≥ 0 (so the era is never negative).
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  PARTS[0] = yoe + era * 400 + (month <= 2 ? 1 : 0);
  PARTS[1] = month;
  PARTS[2] = doy - Math.floor((153 * mp + 2) / 5) + 1;
  return ms - days * MS_PER_DAY;
}

/** Fill PARTS' hours, minutes, seconds and ms with a whole number of ms into a day. */
function splitClock(intoDay: number): void {
  // Under 86,400,000: integer arithmetic throughout.
  let rest = intoDay | 0;
  const hours = (rest / 3_600_000) | 0;
  rest -= hours * 3_600_000;
  const minutes = (rest / 60_000) | 0;
  rest -= minutes * 60_000;
  const seconds = (rest / 1000) | 0;
  PARTS[3] = hours;
  PARTS[4] = minutes;
  PARTS[5] = seconds;
  PARTS[6] = rest - seconds * 1000;
}

const MS_PER_UTC_DAY = 86_400_000;

/** The start (00:00 UTC) of the day of `ms`, epoch ms. */
export function startOfUtcDay(ms: number): number {
  return ms - (((ms % MS_PER_UTC_DAY) + MS_PER_UTC_DAY) % MS_PER_UTC_DAY);
}
