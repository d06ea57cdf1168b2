import { Redis } from 'ioredis';
import type { Logger } from './logger.js';

/** How long a command waits for Redis's answer, ms: far past a healthy answer (well under a millisecond), short beside a request's budget. */
const COMMAND_TIMEOUT_MS = 500;
/** How often a connected Redis is pinged to find one that stopped answering. */
const WATCHDOG_MS = 1_000;

/**
 * An ioredis client for the shared (several-replica) mode. Commands fail fast
 * while Redis is unreachable instead of queueing, so callers fall back to
 * local state at once; reconnection goes on in the background. Outages and
 * recoveries are logged once each, not once per failed command.
 *
 * A Redis that stays connected but stops answering (a paused process, a
 * partition the socket has not noticed) fails each command after
 * COMMAND_TIMEOUT_MS; a ping every WATCHDOG_MS finds it and drops the
 * connection, so that commands fall back at once while it reconnects
 * rather than each waiting out its timeout.
 */
export function createRedisClient(url: string, logger: Logger): Redis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: COMMAND_TIMEOUT_MS,
    lazyConnect: false,
    retryStrategy: (attempt) => Math.min(100 * 2 ** Math.min(attempt, 5), 2_000),
  });
  let up: boolean | null = null;
  const down = (err: string, message: string) => {
    if (up !== false) logger.error({ redis: redact(url), err }, message);
    up = false;
  };
  client.on('ready', () => {
    if (up !== true) logger.info({ redis: redact(url) }, up === null ? 'redis connected' : 'redis reachable again; shared limits and keys resumed');
    up = true;
  });
  client.on('error', (error: Error) => down(error.message, 'redis unreachable; using local limits and the last known keys'));
  const watchdog = setInterval(() => {
    if (client.status !== 'ready') return;
    client.ping().catch((error: unknown) => {
      if (client.status !== 'ready') return;
      down((error as Error).message, 'redis does not answer; using local limits and the last known keys while reconnecting');
      client.disconnect(true);
    });
  }, WATCHDOG_MS);
  watchdog.unref();
  client.on('end', () => {
    clearInterval(watchdog);
    up = false;
  });
  return client;
}

/**
 * Wait until the client is connected, up to `timeoutMs`; true when it is.
 * Commands fail fast while disconnected (no offline queue), so start-up waits
 * here first, then carries on with local fallbacks if Redis is not there.
 */
export function redisReady(client: Redis, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    client.on('ready', onReady);
  });
}

/** The URL without its password, for logs. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable redis url)';
  }
}
