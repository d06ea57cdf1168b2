import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as client from '../src/index.js';
import { ApiError, ConflictError, RateLimitError, UnauthorizedError, UpiRiskError, errorForAnswer } from '../src/errors.js';

test('every error class the package exports is an UpiRiskError named after itself', () => {
  const classes = Object.entries(client).filter(([name]) => name.endsWith('Error'));
  assert.equal(classes.length, 23);
  for (const [name, ErrorClass] of classes) {
    assert.equal((ErrorClass as { prototype: object }).prototype instanceof Error || ErrorClass === UpiRiskError, true, name);
  }
  const samples: UpiRiskError[] = [
    new client.BadRequestError('m'),
    new client.NetworkError('m'),
    new client.TimeoutError('m', false),
    new client.AbortError('m'),
    new client.ResponseFormatError('m'),
    new client.WebhookSignatureError('malformed_header', 'm'),
    new client.RateLimitError('m', 3),
    new client.ConflictError('m', 'dsp_1'),
    new client.MirrorSignatureError('m'),
    new client.MirrorChecksumError('m'),
    new client.MirrorFileError('order', 'm'),
    new client.MirrorReplayError(2, 1),
    new client.MirrorNotReadyError('m'),
    new client.MirrorStorageError('m'),
  ];
  for (const error of samples) {
    assert.ok(error instanceof UpiRiskError && error instanceof Error);
    assert.equal(error.name, error.constructor.name);
    assert.equal(typeof error.code, 'string');
  }
});

test('answers map to classes by their stable code, else by status', () => {
  const byCode = errorForAnswer(400, { error: 'unauthorized', message: 'key revoked' }, 'r1', null);
  assert.ok(byCode instanceof UnauthorizedError);
  assert.deepEqual([byCode.code, byCode.status, byCode.requestId, byCode.message], ['unauthorized', 400, 'r1', 'key revoked']);
  const byStatus = errorForAnswer(401, null, null, null);
  assert.ok(byStatus instanceof UnauthorizedError);
  assert.equal(byStatus.message, 'HTTP 401');
  const limited = errorForAnswer(429, { error: 'rate_limit_exceeded', message: 'm', retry_after: 3 }, null, 3);
  assert.ok(limited instanceof RateLimitError && limited.retryAfter === 3);
  // A 429 is retried and waited on by its status: whatever its code (a gateway's own), it is a RateLimitError.
  for (const body of [{ error: 'quota_exceeded', message: 'daily quota' }, null]) {
    const other = errorForAnswer(429, body, 'r2', 7);
    assert.ok(other instanceof RateLimitError, JSON.stringify(body));
    assert.deepEqual([other.code, other.retryAfter, other.status, other.requestId], ['rate_limit_exceeded', 7, 429, 'r2']);
  }
  const taken = errorForAnswer(409, { error: 'conflict', message: 'taken', dispute_id: 'dsp_1' }, null, null);
  assert.ok(taken instanceof ConflictError && taken.disputeId === 'dsp_1');
  const unknown = errorForAnswer(410, { error: 'gone', message: 'gone' }, null, null);
  assert.ok(unknown instanceof ApiError && unknown.constructor === ApiError);
  assert.equal(unknown.code, 'gone');
  assert.equal(errorForAnswer(418, 'teapot', null, null).code, 'http_418');
});
