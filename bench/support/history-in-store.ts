import { join } from 'node:path';
import type pg from 'pg';
import { CHANGE_LOG_HEADER_BYTES, decodeStoredRecord, type ChangeLog } from '../../src/history/change-log.js';
import { ScoreColumns } from '../../src/history/score-columns.js';
import { beginRecording, insertChanges, insertScoreColumn, recordingAlive } from '../../src/store/answer-history-store.js';
import { migrate } from '../../src/store/migrations.js';
import { connectStore, storePool, type StoreLocation } from '../../src/store/postgres.js';

/**
 * A change log written by the bench, copied into a new schema of a store as
 * a fleet's recorder copies it state by state (store/answer-history-store.ts):
 * every record a row, every column its blocks, a state for each instant a
 * record names, in one stretch of recording. `recordsCopied` runs once the
 * log's records are in (the log is not read after it). Resolves to the
 * schema, the pool on it, and the bytes its tables and indexes take.
 */
export async function copyHistoryToStore(
  url: string,
  log: ChangeLog,
  historyDir: string,
  until: number,
  recordsCopied: () => Promise<void> = () => Promise.resolve(),
): Promise<{ location: StoreLocation; pool: pg.Pool; bytes: number }> {
  const location: StoreLocation = { url, schema: `bench_as_of_${Date.now()}` };
  await migrate(location);
  const pool = storePool(location, 2);
  // The history lease, as a recorder holds it, for the term's fence.
  const holder = await connectStore(location);
  const lockName = `upi-risk answer history ${location.schema}`;
  const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_advisory_lock(hashtext($1))', [lockName])).rows[0]!.pid;
  const term = await beginRecording(pool, location, { lockName, pid }, 0);
  await holder.end();
  const states = new Map<number, string>();
  await log.recordRuns(CHANGE_LOG_HEADER_BYTES, log.bytes, async (run) => {
    // Two statements at a time, on the pool's two connections, so that the store works on two cores; a VPA's
    // records all go to one of them by its number, in the log's order.
    const halves: Buffer[][] = [[], []];
    for (const bytes of run) {
      const record = decodeStoredRecord(bytes, log.path);
      states.set(record.at, record.version);
      halves[record.number % 2]!.push(bytes);
    }
    await Promise.all(halves.filter((half) => half.length > 0).map((half) => insertChanges(pool, half, log.path)));
  });
  await recordsCopied();
  const ats = [...states.keys()];
  for (let i = 0; i < ats.length; i += 10_000) {
    const part = ats.slice(i, i + 10_000);
    await pool.query(
      `INSERT INTO answer_states (at_ms, term, snapshot, position, data_as_of_ms, log_bytes)
       SELECT at, $1, split_part(version, '+', 1), COALESCE(NULLIF(split_part(version, '+', 2), ''), '0')::bigint, at, 0 FROM unnest($2::bigint[], $3::text[]) AS s (at, version)
       ON CONFLICT DO NOTHING`,
      [term, part, part.map((at) => states.get(at)!)],
    );
  }
  const columns = await ScoreColumns.open(join(historyDir, 'scores'), Number.MAX_SAFE_INTEGER);
  for (const column of columns.list()) await insertScoreColumn(pool, column.at, column.scoredAt, await columns.values(column));
  await recordingAlive(pool, location, term, until, true);
  await pool.query('VACUUM ANALYZE answer_changes');
  const { rows } = await pool.query<{ bytes: string }>(
    `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
    [location.schema],
  );
  return { location, pool, bytes: Number(rows[0]!.bytes) };
}

/** Drop the schema `copyHistoryToStore` made, and end its pool. */
export async function dropCopiedHistory(copy: { location: StoreLocation; pool: pg.Pool }): Promise<void> {
  await copy.pool.query(`DROP SCHEMA "${copy.location.schema}" CASCADE`);
  await copy.pool.end();
}
