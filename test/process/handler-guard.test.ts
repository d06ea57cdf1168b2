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
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { buildInProcess, evidence } from '../helpers.js';

/*
 * uWebSockets.js ends the whole process when a handler returns without
 * answering or attaching an abort handler, and an exception escaping a
 * handler amounts to that. These run in this test's own process: were the
 * guard of route-kit.ts missing, the test run would abort here.
 */

const KEY = 'upirisk_test-key-for-the-handler-guard-test-00000';

/** A view whose lookups of `boom@ybl` throw, and whose snapshot meta throws once `metaBroken` is set. */
class BrokenView extends ServingView {
  metaBroken = false;
  override locate(upi: string): number {
    if (upi === 'boom@ybl') throw new Error('simulated lookup failure');
    return super.locate(upi);
  }
}

async function withServer(logError: (fields: Record<string, unknown>) => void, run: (base: string, view: BrokenView) => Promise<void>): Promise<void> {
  const real = buildInProcess([evidence('ok@ybl', 'https://u.example')]);
  const view = new BrokenView(new SnapshotView(real.data));
  const base = view.base;
  // /readyz reads the snapshot's meta within its handler, before any answer.
  Object.defineProperty(view, 'base', {
    get: () => {
      if (view.metaBroken) throw new Error('simulated readiness failure');
      return base;
    },
  });
  const keys = new ActiveKeys();
  keys.replace([
    { id: 'key_000000000001', name: 't', plan: 'default', scopes: ['screen'], limits: null, created_at: '2026-01-01T00:00:00Z', rotated_at: null, revoked_at: null, hash: hashApiKey(KEY) },
  ]);
  const api = createApiApp(
    {
      served: { current: view },
      keys,
      quota: new QuotaService({
        plans: parsePlans({ version: 1, plans: { default: { burst: 1000, sustained: 1000, windowSeconds: 60 } }, authFailuresPerIp: { points: 10, windowSeconds: 60 } }),
      }),
      logger: { ...silentLogger, error: logError },
      version: 'test',
    },
    uWS.App(),
  );
  const listening = await listen(api.app, '127.0.0.1', 0);
  try {
    await run(`http://127.0.0.1:${listening.port}`, view);
  } finally {
    listening.close();
    (api.app as unknown as { close(): void }).close();
  }
}

test('a failure whose log line cannot be written is still answered 500, and the server serves on', async () => {
  let attempts = 0;
  await withServer(
    () => {
      attempts++;
      throw new Error('EPIPE: the log is gone');
    },
    async (base) => {
      const headers = { authorization: `Bearer ${KEY}` };
      const failed = await fetch(`${base}/v1/verify/upi?upi=boom@ybl`, { headers });
      assert.equal(failed.status, 500);
      assert.equal(((await failed.json()) as { error: string }).error, 'internal_error');
      assert.ok(attempts >= 1, 'the failure was offered to the log');
      const ok = await fetch(`${base}/v1/verify/upi?upi=ok@ybl`, { headers });
      assert.equal(ok.status, 200);
      assert.equal(((await ok.json()) as { status: string }).status, 'FLAGGED');
    },
  );
});

test('an exception escaping a handler before any answer is that request\'s 500, logged, and the server serves on', async () => {
  const logged: string[] = [];
  await withServer(
    (fields) => logged.push(String(fields.err)),
    async (base, view) => {
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
      view.metaBroken = true;
      const failed = await fetch(`${base}/readyz`);
      assert.equal(failed.status, 500);
      assert.equal(((await failed.json()) as { error: string }).error, 'internal_error');
      assert.ok(logged.some((line) => line.includes('simulated readiness failure')), 'the exception is logged');
      // A HEAD of it runs the same read in another handler.
      const head = await fetch(`${base}/readyz`, { method: 'HEAD' });
      assert.equal(head.status, 500);
      view.metaBroken = false;
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 200);
      assert.equal(((await ready.json()) as { status: string }).status, 'ready');
    },
  );
});
