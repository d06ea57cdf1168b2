/**
 * Small state files that record one value as `{"<field>": <value>}\n`
 * (the last snapshot served, the data-version positions reserved), read
 * back. Anything else, extra fields included, is not what was written.
 */

/** What `text` holds: the field's value, or why it is not such a record. */
export type OneFieldRecord =
  | { readonly ok: true; readonly value: unknown }
  /** `cause`: the parser's error. */
  | { readonly ok: false; readonly reason: 'not JSON'; readonly cause: unknown }
  | { readonly ok: false; readonly reason: 'not one field' };

/** The value of `field` in `text`, a JSON object holding that field and nothing else. */
export function readOneFieldJson(text: string, field: string): OneFieldRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: 'not JSON', cause: error };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { ok: false, reason: 'not one field' };
  const keys = Object.keys(parsed);
  if (keys.length !== 1 || keys[0] !== field) return { ok: false, reason: 'not one field' };
  return { ok: true, value: (parsed as Record<string, unknown>)[field] };
}

/** The text `readOneFieldJson` reads back. */
export function oneFieldJson(field: string, value: string | number): Buffer {
  return Buffer.from(`${JSON.stringify({ [field]: value })}\n`);
}
