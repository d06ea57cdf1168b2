import { isValidVpa } from '../vpa/vpa.js';
import { MAX_BATCH_ITEMS } from './schemas.js';
import { badRequest, validationError, type HttpError } from './http-error.js';

/**
 * Validate a parsed batch body and return its VPAs, or the error to answer.
 *
 * The 400/422 split (docs/api.md, "Errors"): 422 `validation_error` when the JSON
 * has the wrong shape — not an object, both `upis` and `vpas`, the array not
 * an array, an item not a string, an `as_of` not a string; 400 `bad_request` when the shape is right
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
  if (fields.as_of !== undefined && typeof fields.as_of !== 'string') return validationError('"as_of" must be a string, an RFC 3339 instant');
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
