import type pg from 'pg';
import type { IntakeResult } from '../service/evidence-intake.js';
import { appendEvidenceBytes } from '../store/evidence-log.js';
import { HEAD_WAIT_MS } from '../store/log-head.js';
import { storeError, type StoreLocation } from '../store/postgres.js';
import type { FollowerService } from './follower-service.js';

/** How long an HTTP ingest waits for this follower to serve what it committed before answering anyway. */
export const SERVED_WAIT_MS = 5_000;

/**
 * POST /v1/admin/evidence on a follower: the body is appended to the
 * store's evidence log in one transaction (all or nothing, as `upi-risk
 * ingest --store` appends a file), answered once committed and served here
 * (or after SERVED_WAIT_MS; every follower serves it within moments). The
 * store down, or the log held by another writer for HEAD_WAIT_MS, is
 * ERR_STORE, answered 503: nothing was stored.
 */
export async function takeEvidenceIntoLog(pool: pg.Pool, location: StoreLocation, follower: FollowerService, body: Uint8Array): Promise<IntakeResult> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw storeError(location, error);
  }
  let result;
  try {
    result = await appendEvidenceBytes(client, location, body, 'request body', HEAD_WAIT_MS);
  } catch (error) {
    // The connection may be what failed: not handed out again.
    client.release(true);
    throw error;
  }
  client.release();
  if (!result.accepted) {
    return { kind: 'refused', invalidLines: result.invalidLines, errors: result.errors.map(({ line, reason }) => ({ line, reason })) };
  }
  if (result.validLines === 0) return { kind: 'empty' };
  await follower.served(result.position, SERVED_WAIT_MS);
  return { kind: 'stored', items: result.validLines, added: result.added, duplicates: result.duplicates, dataVersion: follower.view.version };
}
