import type { DataDir } from '../common/data-dir.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { createRedisClient, redact, redisReady } from '../common/redis.js';
import { FileKeyBackend, keyFilePath } from '../access/key-file.js';
import type { KeyBackend } from '../access/key-record.js';
import { FileAuditLog, auditLogPath, type AuditLog } from '../access/audit-log.js';
import { PostgresAuditLog } from '../store/postgres-audit-log.js';
import { RedisKeyBackend } from '../access/redis-key-backend.js';
import type { Redis } from 'ioredis';
import { storePool, type StoreLocation } from '../store/postgres.js';
import { checkSchema } from '../store/migrations.js';
import { PostgresKeyBackend } from '../store/postgres-key-backend.js';

export const DEFAULT_REDIS_PREFIX = 'upi-risk';

export interface StoreChoice {
  readonly backend: KeyBackend;
  /** Where key changes are recorded: beside the keys in the store, else in the data directory. */
  readonly audit: AuditLog;
  readonly redis: Redis | null;
  readonly prefix: string;
  close(): Promise<void>;
}

/**
 * Keys in the fleet's PostgreSQL store when `store` is given (then Redis,
 * when given too, only shares quotas), else in Redis when --redis (or
 * REDIS_URL) is given, else in the data directory's key file.
 */
export async function chooseKeyBackend(
  dir: DataDir,
  values: { redis?: string | undefined; 'redis-prefix'?: string | undefined },
  logger: Logger = silentLogger,
  readyTimeoutMs = 5_000,
  store: StoreLocation | null = null,
): Promise<StoreChoice> {
  const url = values.redis ?? process.env.REDIS_URL;
  const prefix = values['redis-prefix'] ?? DEFAULT_REDIS_PREFIX;
  const redis = url === undefined || url === '' ? null : await connectRedis(url, logger, readyTimeoutMs);
  const closeRedis = async () => {
    await redis?.quit().catch(() => redis.disconnect());
  };
  if (store !== null) {
    const pool = storePool(store, 2);
    try {
      await checkSchema(pool, store);
    } catch (error) {
      await pool.end().catch(() => {});
      await closeRedis();
      throw error;
    }
    return {
      backend: new PostgresKeyBackend(pool, store),
      audit: new PostgresAuditLog(pool, store),
      redis,
      prefix,
      close: async () => {
        await pool.end().catch(() => {});
        await closeRedis();
      },
    };
  }
  if (redis === null) {
    return { backend: new FileKeyBackend(keyFilePath(dir)), audit: new FileAuditLog(auditLogPath(dir)), redis: null, prefix, close: async () => {} };
  }
  return { backend: new RedisKeyBackend(redis, prefix), audit: new FileAuditLog(auditLogPath(dir)), redis, prefix, close: closeRedis };
}

async function connectRedis(url: string, logger: Logger, readyTimeoutMs: number): Promise<Redis> {
  const redis = createRedisClient(url, logger);
  if (!(await redisReady(redis, readyTimeoutMs))) {
    logger.error({ redis: redact(url) }, 'redis not reachable yet; carrying on with local limits and retrying');
  }
  return redis;
}
