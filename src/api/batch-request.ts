import { isValidVpa } from '../vpa/vpa.js';
import { MAX_BATCH_ITEMS } from './schemas.js';
import { badRequest, validationError, type HttpError } from '../http/http-error.js';

/**
 * Validate a parsed batch body and return its VPAs, or the error to answer.
 *
 * The 400/422 split (README, "Errors"): 422 `validation_error` when the JSON
 * has the wrong shape — not an object, both `upis` and `vpas`, the array not
 * an array, an item not a string; 400 `bad_request` when the shape is right
 * but the content is not — no array at all, 0 or more than 100 items, an item
 * that is not a valid VPA. Accepts exactly what BatchRequestSchema accepts
 * (a property test holds the two together); hand-written because it runs on
 * every batch and must name the offending index.
 */
export function parseBatchRequest(body: unknown): string[] | HttpError {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return validationError('request body must be a JSON object with a "upis" array');
  }
  const fields = body as Record<string, unknown>;
  const hasUpis = fields.upis !== undefined;
  const hasVpas = fields.vpas !== undefined;
  if (hasUpis && hasVpas) return validationError('give either "upis" or its alias "vpas", not both');
  if (!hasUpis && !hasVpas) return badRequest('missing batch array "upis"');
  const name = hasUpis ? 'upis' : 'vpas';
  const items = hasUpis ? fields.upis : fields.vpas;
  if (!Array.isArray(items)) return validationError(`"${name}" must be an array of strings`);
  for (let i = 0; i < items.length; i++) {
    if (typeof items[i] !== 'string') return validationError(`"${name}"[${i}] must be a string`);
  }
  if (items.length === 0) return badRequest(`"${name}" must hold 1 to ${MAX_BATCH_ITEMS} VPAs, got none`);
  if (items.length > MAX_BATCH_ITEMS) return badRequest(`"${name}" must hold 1 to ${MAX_BATCH_ITEMS} VPAs, got ${items.length}`);
  for (let i = 0; i < items.length; i++) {
    if (!isValidVpa(items[i] as string)) return badRequest(`"${name}"[${i}] is not a valid VPA (handle@provider)`);
  }
  return items as string[];
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The fast path of batch parsing: a body of exactly the documented shape,
 * `{"upis": ["...", ...]}` (or `"vpas"`) whose strings hold no escapes and
 * no bytes outside printable ASCII, becomes that object without JSON.parse
 * building a generic tree. Anything else (other keys, escapes, non-ASCII,
 * numbers, bad JSON) answers null, and the caller parses the body with
 * JSON.parse as before, so every error is reported exactly as there. For a
 * body it accepts, the result is what JSON.parse returns (a property test
 * holds the two together).
 */
export function scanBatchBody(body: Uint8Array): { upis: string[] } | { vpas: string[] } | null {
  const n = body.length;
  let at = skipSpace(body, 0);
  if (body[at] !== 0x7b) return null; // {
  at = skipSpace(body, at + 1);
  if (body[at] !== QUOTE) return null;
  const nameEnd = stringEnd(body, at + 1);
  if (nameEnd < 0) return null;
  const name = latin1(body, at + 1, nameEnd);
  if (name !== 'upis' && name !== 'vpas') return null;
  at = skipSpace(body, nameEnd + 1);
  if (body[at] !== 0x3a) return null; // :
  at = skipSpace(body, at + 1);
  if (body[at] !== 0x5b) return null; // [
  at = skipSpace(body, at + 1);
  const items: string[] = [];
  if (body[at] === 0x5d) {
    at++;
  } else {
    for (;;) {
      if (body[at] !== QUOTE) return null;
      const end = stringEnd(body, at + 1);
      if (end < 0) return null;
      items.push(latin1(body, at + 1, end));
      at = skipSpace(body, end + 1);
      if (body[at] === 0x2c) {
        at = skipSpace(body, at + 1);
        continue;
      }
      if (body[at] !== 0x5d) return null; // ]
      at++;
      break;
    }
  }
  at = skipSpace(body, at);
  if (body[at] !== 0x7d) return null; // }
  if (skipSpace(body, at + 1) !== n) return null;
  return name === 'upis' ? { upis: items } : { vpas: items };
}

/** Index of the closing quote of a string starting at `from`, or -1 when it has an escape, a control char or a non-ASCII byte. */
function stringEnd(body: Uint8Array, from: number): number {
  for (let i = from; i < body.length; i++) {
    const b = body[i]!;
    if (b === QUOTE) return i;
    if (b === BACKSLASH || b < 0x20 || b > 0x7e) return -1;
  }
  return -1;
}

/** First index at or after `from` that is not JSON whitespace. */
function skipSpace(body: Uint8Array, from: number): number {
  let i = from;
  while (i < body.length) {
    const b = body[i]!;
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) break;
    i++;
  }
  return i;
}

function latin1(body: Uint8Array, start: number, end: number): string {
  return Buffer.from(body.buffer, body.byteOffset + start, end - start).toString('latin1');
}
