import { randomUUID } from 'node:crypto';
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { formatIso } from '../common/time.js';
import type { Logger } from '../common/logger.js';
import type { Intelligence } from '../engine/intelligence.js';
import type { BatchItem } from '../engine/verdict.js';
import { isClusterIdShape } from '../engine/verdict.js';
import { isValidVpa } from '../vpa/vpa.js';
import { MAX_BODY_BYTES } from '../api/schemas.js';
import { parseBatchRequest } from '../api/batch-request.js';
import { openApiDocument } from '../api/openapi.js';
import type { KeyRecord } from '../access/key-store.js';
import {
  HttpError,
  STATUS_LINES,
  badRequest,
  internalError,
  notFound,
  serviceUnavailable,
  unauthorized,
} from './http-error.js';

/** Where the edge gets its answers and its keys; the engine never imports the edge. */
export interface ApiDependencies {
  readonly intelligence: { readonly current: Intelligence };
  readonly keys: { verify(presentedKey: string): KeyRecord | null };
  readonly logger: Logger;
  readonly version: string;
}

/**
 * Per-request context: the snapshot is taken once, at the start, so a
 * request — every item of a batch included — is answered from one snapshot
 * even if a swap happens meanwhile.
 */
interface Exchange {
  readonly res: HttpResponse;
  readonly requestId: string;
  readonly intel: Intelligence;
  closed: boolean;
}

const JSON_TYPE = 'application/json';

/** Build the uWebSockets.js app with every v1 route. */
export function createApiApp(deps: ApiDependencies, app: TemplatedApp = uWS.App()): TemplatedApp {
  const openApiBody = JSON.stringify(openApiDocument(deps.version));

  const begin = (res: HttpResponse): Exchange => ({ res, requestId: randomUUID(), intel: deps.intelligence.current, closed: false });

  /** Run a synchronous handler; anything unexpected becomes a 500 and the server keeps serving. */
  const guard = (handler: (x: Exchange, req: HttpRequest) => void) => (res: HttpResponse, req: HttpRequest) => {
    const x = begin(res);
    try {
      handler(x, req);
    } catch (error) {
      fail(x, error);
    }
  };

  const fail = (x: Exchange, error: unknown) => {
    if (!(error instanceof HttpError)) {
      deps.logger.error({ requestId: x.requestId, err: String((error as Error)?.stack ?? error) }, 'request failed');
    }
    sendError(x, error instanceof HttpError ? error : internalError());
  };

  const authenticate = (req: HttpRequest): KeyRecord => {
    const header = req.getHeader('authorization');
    if (header === '') throw unauthorized('missing Authorization header; send "Authorization: Bearer <API key>"');
    const space = header.indexOf(' ');
    const scheme = space < 0 ? header : header.slice(0, space);
    if (scheme.toLowerCase() !== 'bearer') throw unauthorized('the Authorization scheme must be Bearer');
    const key = header.slice(space + 1).trim();
    const record = key === '' ? null : deps.keys.verify(key);
    if (record === null) throw unauthorized('invalid API key');
    return record;
  };

  app.get(
    '/v1/verify/upi',
    guard((x, req) => {
      authenticate(req);
      const upi = req.getQuery('upi');
      if (upi === undefined || upi === '') throw badRequest('missing query parameter "upi"');
      if (!isValidVpa(upi)) throw badRequest('"upi" is not a valid VPA (handle@provider)');
      sendJson(x, 200, JSON.stringify(x.intel.verdict(upi)));
    }),
  );

  app.post('/v1/verify/upi/batch', (res, req) => {
    const x = begin(res);
    try {
      authenticate(req);
      const contentType = req.getHeader('content-type');
      if (!isJsonContentType(contentType)) throw badRequest('Content-Type must be application/json');
      const declared = req.getHeader('content-length');
      if (declared !== '' && Number(declared) > MAX_BODY_BYTES) throw badRequest(`request body larger than ${MAX_BODY_BYTES} bytes`, true);
    } catch (error) {
      fail(x, error);
      return;
    }
    res.onAborted(() => {
      x.closed = true;
    });
    readBody(x, MAX_BODY_BYTES, (body) => answerBatch(x, body));
  });

  const answerBatch = (x: Exchange, body: Buffer | HttpError) => {
    try {
      if (body instanceof HttpError) throw body;
      if (body.length === 0) throw badRequest('request body missing; send {"upis": ["handle@provider", ...]}');
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        throw badRequest('request body is not valid JSON');
      }
      const upis = parseBatchRequest(parsed);
      if (upis instanceof HttpError) throw upis;
      const results: BatchItem[] = new Array(upis.length);
      let flagged = 0;
      for (let i = 0; i < upis.length; i++) {
        const item = x.intel.batchItem(upis[i]!);
        if (item.status === 'FLAGGED') flagged++;
        results[i] = item;
      }
      sendJson(x, 200, JSON.stringify({ results, total: upis.length, flagged_count: flagged, cleared_count: upis.length - flagged }));
    } catch (error) {
      fail(x, error);
    }
  };

  app.get(
    '/v1/verify/upi/cluster/:id',
    guard((x, req) => {
      authenticate(req);
      const id = req.getParameter(0) ?? '';
      if (id === '') throw badRequest('missing cluster id');
      if (!isClusterIdShape(id)) throw badRequest('cluster id must have the form MC-<number>');
      const cluster = x.intel.cluster(id);
      if (cluster === null) throw notFound(`no cluster ${id}`);
      sendJson(x, 200, JSON.stringify(cluster));
    }),
  );
  app.get(
    '/v1/verify/upi/cluster/',
    guard((_x, req) => {
      authenticate(req);
      throw badRequest('missing cluster id');
    }),
  );

  app.get(
    '/v1/cyber/check',
    guard((_x, req) => {
      authenticate(req);
      throw serviceUnavailable('the entity exposure check is planned and not yet available');
    }),
  );
  app.post(
    '/v1/audit/app',
    guard((_x, req) => {
      authenticate(req);
      throw serviceUnavailable('the mobile app audit is planned and not yet available');
    }),
  );

  app.get(
    '/v1/openapi.json',
    guard((x) => sendJson(x, 200, openApiBody)),
  );

  app.any(
    '/*',
    guard((_x, req) => {
      throw notFound(`no such endpoint: ${req.getMethod().toUpperCase()} ${req.getUrl()}`);
    }),
  );

  return app;
}

function isJsonContentType(value: string): boolean {
  const semicolon = value.indexOf(';');
  const type = (semicolon < 0 ? value : value.slice(0, semicolon)).trim().toLowerCase();
  return type === JSON_TYPE;
}

/**
 * Collect the body, refusing as soon as it passes `limit` (nothing past the
 * cap is kept). uWS reuses the chunk memory after the callback, so each chunk
 * is copied once, and the whole body concatenated once at the end.
 */
function readBody(x: Exchange, limit: number, done: (body: Buffer | HttpError) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  x.res.onData((chunk, isLast) => {
    if (finished) return;
    size += chunk.byteLength;
    if (size > limit) {
      finished = true;
      done(badRequest(`request body larger than ${limit} bytes`, true));
      return;
    }
    chunks.push(Buffer.from(new Uint8Array(chunk).slice()));
    if (isLast) {
      finished = true;
      done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    }
  });
}

function sendJson(x: Exchange, status: number, body: string, extraHeader?: readonly [string, string], closeConnection = false): void {
  if (x.closed) return;
  x.closed = true; // answered: nothing may write to this response again
  const meta = x.intel.meta;
  x.res.cork(() => {
    x.res
      .writeStatus(STATUS_LINES[status] ?? `${status}`)
      .writeHeader('Content-Type', JSON_TYPE)
      .writeHeader('X-Request-Id', x.requestId)
      .writeHeader('X-Data-Version', meta.id)
      .writeHeader('X-Data-As-Of', formatIso(meta.dataAsOf > 0 ? meta.dataAsOf : meta.createdAt));
    if (extraHeader !== undefined) x.res.writeHeader(extraHeader[0], extraHeader[1]);
    x.res.end(body, closeConnection);
  });
}

function sendError(x: Exchange, error: HttpError): void {
  const body: Record<string, unknown> = { error: error.code, message: error.message };
  if (error.retryAfter !== undefined) body.retry_after = error.retryAfter;
  const header: readonly [string, string] | undefined =
    error.status === 401 ? ['WWW-Authenticate', 'Bearer'] : error.retryAfter !== undefined ? ['Retry-After', String(error.retryAfter)] : undefined;
  // A refused upload may still be streaming in; closing the connection stops reading it.
  sendJson(x, error.status, JSON.stringify(body), header, error.closeConnection);
}
