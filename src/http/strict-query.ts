/**
 * Strict query-string decoding.
 *
 * uWebSockets.js decodes `getQuery(key)` leniently: a `%` not followed by two
 * hex digits is decoded into some other character (`abc%zz%40ybl` comes back
 * as `abcs@ybl`), and bytes that are not UTF-8 become U+FFFD. A lookup must
 * answer for the VPA the client sent or refuse it, so the service reads the
 * raw query itself: every escape must be `%` and two hex digits, and the
 * escaped bytes must be UTF-8, or the request is refused. A query without
 * `%` needs no decoding and costs a scan for its key.
 *
 * As with uWebSockets.js, keys are matched as sent, not decoded, and a `+`
 * in a value is a space (form encoding); `%2B` is the `+`.
 */

const PLUS = /\+/g;

/** What `strictQueryValue` answers for a query whose percent-encoding is malformed. */
export const MALFORMED_QUERY = null;

/** Decode `text` strictly: its characters with every `%XX` escape decoded as UTF-8, or null when an escape or the bytes are malformed. */
export function strictDecode(text: string): string | null {
  let at = text.indexOf('%');
  if (at < 0) return text;
  // Escapes of ASCII bytes (a VPA's `%40`) are decoded here: each is a
  // character of its own, the same as decodeURIComponent gives, which would
  // copy the text through a growing byte buffer. Anything else goes to it.
  let decoded = '';
  let from = 0;
  while (at >= 0) {
    const byte = hexByte(text, at + 1);
    if (byte < 0 || byte >= 0x80) return decodeUtf8Escapes(text);
    decoded += text.slice(from, at) + String.fromCharCode(byte);
    from = at + 3;
    at = text.indexOf('%', from);
  }
  return decoded + text.slice(from);
}

/** decodeURIComponent, or null where it throws. */
function decodeUtf8Escapes(text: string): string | null {
  try {
    // The ECMAScript decoder is the strict one: URIError on `%` without two
    // hex digits, on invalid, overlong or surrogate UTF-8 sequences.
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** The byte of the two hex digits at `at` in `text`, or -1 when they are not two hex digits. */
function hexByte(text: string, at: number): number {
  if (at + 2 > text.length) return -1;
  const high = hexValue(text.charCodeAt(at));
  const low = hexValue(text.charCodeAt(at + 1));
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/**
 * The decoded value of the first `key=value` pair of `query` (the raw query
 * string, without `?`): undefined when there is none, MALFORMED_QUERY (null)
 * when any escape of the whole query is malformed, even outside that pair.
 */
export function strictQueryValue(query: string, key: string): string | undefined | null {
  let from = -1;
  let to = -1;
  for (let start = 0; start <= query.length; ) {
    let end = query.indexOf('&', start);
    if (end < 0) end = query.length;
    if (end - start > key.length && query.charCodeAt(start + key.length) === 0x3d /* = */ && query.startsWith(key, start)) {
      from = start + key.length + 1;
      to = end;
      break;
    }
    start = end + 1;
  }
  // Escapes outside the value must be well formed too; those inside it are
  // checked by decoding it, so a query that is just the pair (the usual
  // lookup) is decoded once.
  // (indexOf, not lastIndexOf: the one is a scan in V8's own code, the other a call into its runtime.)
  const first = query.indexOf('%');
  const elsewhere = first >= 0 && (from < 0 || first < from || query.indexOf('%', to) >= 0);
  if (elsewhere && strictDecode(query) === null) return MALFORMED_QUERY;
  if (from < 0) return undefined;
  const value = query.slice(from, to);
  return strictDecode(value.indexOf('+') < 0 ? value : value.replace(PLUS, ' '));
}
