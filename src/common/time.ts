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
  return ((days * 24 + hour) * 60 + minute - offsetMinutes) * 60_000 + second * 1000 + millis;
}

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
  if (!(ms >= 0 && ms < FOUR_DIGIT_YEARS_END) || !Number.isInteger(ms)) {
    const iso = new Date(ms).toISOString();
    return iso.endsWith('.000Z') ? `${iso.slice(0, -5)}Z` : iso;
  }
  const days = Math.floor(ms / MS_PER_DAY);
  // H. Hinnant's civil_from_days, for days ≥ 0 (so the era is never negative).
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const intoDay = ms - days * MS_PER_DAY;
  return `${year}-${TWO_DIGITS[month]!}-${TWO_DIGITS[day]!}T${formatClock(intoDay, intoDay % 1000 !== 0)}Z`;
}

/** `HH:MM:SS`, or `HH:MM:SS.mmm` with `withMillis`, of a whole number of ms into a day. */
export function formatClock(intoDay: number, withMillis: boolean): string {
  let rest = intoDay;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const clock = `${TWO_DIGITS[hours]!}:${TWO_DIGITS[minutes]!}:${TWO_DIGITS[seconds]!}`;
  return withMillis ? clock + FRACTIONS[rest - seconds * 1000]! : clock;
}
