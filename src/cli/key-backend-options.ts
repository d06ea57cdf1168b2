import type { DataDir } from '../common/data-dir.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { createRedisClient, redact, redisReady } from '../common/redis.js';
import { FileKeyBackend, keyFilePath } from '../access/key-file.js';
import type { KeyBackend } from '../access/key-record.js';
import { RedisKeyBackend } from '../access/redis-key-backend.js';
import type { Redis } from 'ioredis';
import { ConfigError } from '../common/errors.js';
import { connectStore, type StoreLocation } from '../store/postgres.js';
import { checkSchema } from '../store/migrations.js';
import { PostgresKeyBackend } from '../store/postgres-key-backend.js';

/** The options every command that touches keys or quotas shares. */
export const REDIS_OPTIONS = {
  redis: { type: 'string' },
  'redis-prefix': { type: 'string' },
} as const;

export const DEFAULT_REDIS_PREFIX = 'upi-risk';

export interface StoreChoice {
  readonly backend: KeyBackend;
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
  if (store !== null) {
    if (url !== undefined && url !== '') throw new ConfigError('keys live in the store given with --store: leave out --redis');
    const client = await connectStore(store);
    try {
      await checkSchema(client, store);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    return { backend: new PostgresKeyBackend(client, store), redis: null, prefix, close: () => client.end().catch(() => {}) };
  }
  if (url === undefined || url === '') {
    return { backend: new FileKeyBackend(keyFilePath(dir)), redis: null, prefix, close: async () => {} };
  }
  const redis = createRedisClient(url, logger);
  if (!(await redisReady(redis, readyTimeoutMs))) {
    logger.error({ redis: redact(url) }, 'redis not reachable yet; carrying on with local limits and retrying');
  }
  return {
    backend: new RedisKeyBackend(redis, prefix),
    redis,
    prefix,
    close: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
