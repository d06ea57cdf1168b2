import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import type { AdminAnswer, CorrectionRequest } from '../api/admin-requests.js';
import { ClearanceCreateRequestSchema, ClearanceEndRequestSchema, MAX_CLEARANCE_REFERENCE, MAX_CORRECTION_REASON, MAX_RETRACTION_IDS, RetractionRequestSchema } from '../api/admin-schemas.js';
import { HttpError, badRequest, conflict, errorJson, notFound, unavailableAfter, validationError } from '../api/http-error.js';
import { isStorableText } from '../common/control-characters.js';
import { ClearanceConflictError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { CorrectionDesk } from '../service/corrections.js';
import type { ClearancePage, ClearanceQuery } from './book.js';

/** What the admin API needs of a desk: the shared interface, and the list. */
export interface ListingDesk extends CorrectionDesk {
  listClearances(query: ClearanceQuery): Promise<ClearancePage>;
  endClearance(id: string, by: string, reason?: string | null): ReturnType<CorrectionDesk['endClearance']>;
}

const REASON_RULE = `a text of 1 to ${MAX_CORRECTION_REASON} characters, not all spaces, without control characters but tabs and line breaks`;

/** A body's schema, decided once, with the rule of each field for the messages. */
interface BodyRules {
  readonly check: ReturnType<typeof TypeCompiler.Compile>;
  readonly fields: Readonly<Record<string, string>>;
}

const bodyRules = (schema: TSchema, fields: Record<string, string>): BodyRules => ({ check: TypeCompiler.Compile(schema), fields });

const RETRACTION = bodyRules(RetractionRequestSchema, {
  evidence_ids: `a list of 1 to ${MAX_RETRACTION_IDS} evidence ids, each 1 to 256 characters without control characters`,
  reason: REASON_RULE,
});
const CLEARANCE = bodyRules(ClearanceCreateRequestSchema, {
  upi: 'a VPA (handle@provider)',
  reason: REASON_RULE,
  reference: `a text of 1 to ${MAX_CLEARANCE_REFERENCE} characters, without control characters but tabs and line breaks`,
});
const CLEARANCE_END = bodyRules(ClearanceEndRequestSchema, { reason: REASON_RULE });

/** Errors of a value a field cannot take (400); any other is of the body's shape (422): docs/api.md, Errors. */
const VALUE_ERRORS = new Set<ValueErrorType>([
  ValueErrorType.StringMinLength,
  ValueErrorType.StringMaxLength,
  ValueErrorType.StringPattern,
  ValueErrorType.ArrayMinItems,
  ValueErrorType.ArrayMaxItems,
]);

/**
 * The main thread's side of the corrections routes (docs/api.md,
 * Corrections): checks each body against its schema, hands the change to
 * the desk, and answers, always: a refusal as the API's error body, a
 * failure to record as 503.
 */
export class CorrectionRequests {
  readonly #desk: ListingDesk;
  readonly #logger: Logger;

  constructor(options: { readonly desk: ListingDesk; readonly logger: Logger }) {
    this.#desk = options.desk;
    this.#logger = options.logger;
  }

  async handle(request: CorrectionRequest): Promise<AdminAnswer> {
    try {
      return await this.#answer(this.#desk, request);
    } catch (error) {
      if (error instanceof HttpError) return { status: error.status, body: errorJson(error) };
      if (error instanceof ClearanceConflictError) {
        return { status: 409, body: errorJson(conflict(error.message, { clearance_id: error.clearanceId })) };
      }
      this.#logger.error({ op: request.op, err: (error as Error).message }, 'correction not carried out');
      return { status: 503, body: errorJson(unavailableAfter('the correction could not be carried out', error)) };
    }
  }

  async #answer(desk: ListingDesk, request: CorrectionRequest): Promise<AdminAnswer> {
    const by = request.key.id;
    switch (request.op) {
      case 'retractions.create': {
        const body = checked<{ evidence_ids: string[]; reason: string }>(RETRACTION, request.body);
        return answer(200, await desk.retract(body.evidence_ids, body.reason, by));
      }
      case 'clearances.create': {
        const body = checked<{ upi: string; reason: string; reference?: string }>(CLEARANCE, request.body);
        return answer(201, await desk.clear({ upi: body.upi, reason: body.reason, reference: body.reference ?? null }, by));
      }
      case 'clearances.list': {
        const page = await desk.listClearances({ upi: request.upi, cursor: request.cursor, limit: request.limit });
        if (page === 'bad-cursor') throw badRequest('"cursor" is not one this service handed out: pass the next_cursor of the page before');
        return answer(200, { clearances: page.clearances, next_cursor: page.nextCursor });
      }
      case 'clearances.get':
        return answer(200, (await desk.clearance(request.id)) ?? noClearance(request.id));
      case 'clearances.end': {
        const body = checked<{ reason?: string }>(CLEARANCE_END, request.body);
        return answer(200, (await desk.endClearance(request.id, by, body.reason ?? null)) ?? noClearance(request.id));
      }
    }
  }
}

function answer(status: number, value: unknown): AdminAnswer {
  return { status, body: JSON.stringify(value) };
}

function noClearance(id: string): never {
  throw notFound(`no clearance ${JSON.stringify(id.slice(0, 80))}`);
}

/**
 * The body, when its schema holds it; else the error of the first thing
 * wrong with its shape (422), or of the first value a field cannot take
 * (400), naming the field and its rule.
 */
function checked<T>(rules: BodyRules, body: unknown): T {
  if (rules.check.Check(body)) {
    // What the schema cannot say: its text, and the ids it names, can be stored by every store (isStorableText).
    for (const [field, value] of Object.entries(body as Record<string, unknown>)) {
      const texts = Array.isArray(value) ? value : [value];
      const bad = texts.findIndex((text) => typeof text === 'string' && !isStorableText(text));
      if (bad >= 0) throw badRequest(`"${field}" must be ${rules.fields[field] ?? 'storable text'}${Array.isArray(value) ? ` (item ${bad} is not)` : ''}`);
    }
    return body as T;
  }
  const errors = [...rules.check.Errors(body)];
  const shape = errors.find((e) => !VALUE_ERRORS.has(e.type));
  const first = shape ?? errors[0]!;
  const [field = '', item] = first.path
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
  const rule = rules.fields[field];
  if (rule === undefined) {
    throw validationError(`unknown field ${JSON.stringify(field)}; the fields are ${Object.keys(rules.fields).join(', ')}`);
  }
  const message =
    first.type === ValueErrorType.ObjectRequiredProperty ? `"${field}" is required: ${rule}` : `"${field}" must be ${rule}${item === undefined ? '' : ` (item ${item} is not)`}`;
  throw shape === undefined ? badRequest(message) : validationError(message);
}
