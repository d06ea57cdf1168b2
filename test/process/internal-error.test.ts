import { test } from 'node:test';
import assert from 'node:assert/strict';
import uWS from 'uWebSockets.js';
import { createApiApp } from '../../src/http/app.js';
import { listen } from '../../src/http/server.js';
import { QuotaService } from '../../src/access/quota.js';
import { parsePlans } from '../../src/access/plans.js';
import { ActiveKeys } from '../../src/access/active-keys.js';
import { hashApiKey } from '../../src/access/api-key.js';
import { silentLogger } from '../../src/common/logger.js';
import { buildInProcess, evidence } from '../helpers.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { ServingView } from '../../src/engine/serving-view.js';

test('an unexpected failure answers 500 internal_error for that request only, and the server keeps serving', async () => {
  const real = buildInProcess([evidence('ok@ybl', 'https://u.example')]);
  // A view whose lookups of one VPA throw, standing in for any bug below the edge.
  class BrokenView extends ServingView {
    override locate(upi: string): number {
      if (upi === 'boom@ybl') throw new Error('simulated failure');
      return super.locate(upi);
    }
  }
  const broken = new BrokenView(new SnapshotView(real.data));
  const key = 'upirisk_test-key-for-the-internal-error-test-0000';
  const keys = new ActiveKeys();
  keys.replace([
    { id: 'key_000000000001', name: 't', plan: 'default', scopes: ['screen'], limits: null, created_at: '2026-01-01T00:00:00Z', rotated_at: null, revoked_at: null, hash: hashApiKey(key) },
  ]);
  const errors: string[] = [];
  const loggedIds: unknown[] = [];
  const api = createApiApp(
    {
      served: { current: broken },
      keys,
      quota: new QuotaService({
        plans: parsePlans({ version: 1, plans: { default: { burst: 1000, sustained: 1000, windowSeconds: 60 } }, authFailuresPerIp: { points: 10, windowSeconds: 60 } }),
      }),
      logger: {
        ...silentLogger,
        error: (fields) => {
          errors.push(String(fields.err));
          loggedIds.push(fields.requestId);
        },
      },
      version: 'test',
    },
    uWS.App(),
  );
  const listening = await listen(api.app, '127.0.0.1', 0);
  try {
    const base = `http://127.0.0.1:${listening.port}`;
    const headers = { authorization: `Bearer ${key}` };
    const failed = await fetch(`${base}/v1/verify/upi?upi=boom@ybl`, { headers });
    assert.equal(failed.status, 500);
    const body = (await failed.json()) as { error: string; message: string };
    assert.equal(body.error, 'internal_error');
    assert.equal(body.message.includes('simulated'), false, 'internals are not leaked to callers');
    assert.match(failed.headers.get('x-request-id') ?? '', /^[0-9a-f]{16}-[0-9a-z]+$/);
    assert.match(errors[0] ?? '', /simulated failure/, 'the failure is logged');
    // The log line names the request as its answer did, so support can find one from the other.
    assert.deepEqual(loggedIds, [failed.headers.get('x-request-id')]);
    const ok = await fetch(`${base}/v1/verify/upi?upi=ok@ybl`, { headers });
    assert.equal(ok.status, 200);
    assert.equal(((await ok.json()) as { status: string }).status, 'FLAGGED');
  } finally {
    listening.close();
    (api.app as unknown as { close(): void }).close();
  }
});
