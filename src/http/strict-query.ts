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
  if (text.indexOf('%') < 0) return text;
  try {
    // The ECMAScript decoder is the strict one: URIError on `%` without two
    // hex digits, on invalid, overlong or surrogate UTF-8 sequences.
    return decodeURIComponent(text);
  } catch {
    return null;
  }
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
  const elsewhere = from < 0 ? query.indexOf('%') >= 0 : query.lastIndexOf('%', from - 1) >= 0 || query.indexOf('%', to) >= 0;
  if (elsewhere && strictDecode(query) === null) return MALFORMED_QUERY;
  if (from < 0) return undefined;
  const value = query.slice(from, to);
  return strictDecode(value.indexOf('+') < 0 ? value : value.replace(PLUS, ' '));
}
