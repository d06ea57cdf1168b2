import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { KeyFileError, KeyStoreError } from '../common/errors.js';
import { redisReady } from '../common/redis.js';
import { inTurn } from '../common/turns.js';
import { byCreation, readKeyRecords, type KeyBackend, type KeyRecord } from './key-record.js';

/** How long a change waits for its own connection to Redis. */
const CONNECT_WAIT_MS = 5_000;

/**
 * Key records in Redis, shared by every replica: a hash `<prefix>:keys`
 * (field = key id, value = the record as JSON, hash of the key included, never
 * the key) and `<prefix>:keys:version`, set to a new random token by every
 * change, which servers poll to reload within a second. A token rather than a
 * counter: a Redis that lost its data would count again from 1, and a server
 * that saw version 1 before would miss the keys created after.
 */
export class RedisKeyBackend implements KeyBackend {
  readonly #redis: Redis;
  readonly #keysKey: string;
  readonly #versionKey: string;

  constructor(redis: Redis, prefix = 'upi-risk') {
    this.#redis = redis;
    this.#keysKey = `${prefix}:keys`;
    this.#versionKey = `${prefix}:keys:version`;
  }

  get description(): string {
    return `redis ${this.#keysKey}`;
  }

  async read(): Promise<KeyRecord[]> {
    return parseRecords(await this.#redis.hgetall(this.#keysKey), this.description);
  }

  /**
   * An optimistic transaction, retried if another writer changed the keys
   * in between. WATCH belongs to a connection and any EXEC on it ends every
   * watch: the shared connection carries this process's other commands and
   * transactions (rate limits among them), so each change runs on a
   * connection of its own, and this process's changes take turns.
   */
  update<T>(change: (keys: KeyRecord[]) => { keys: KeyRecord[]; result: T }): Promise<T> {
    return inTurn(`redis ${this.#keysKey}`, async () => {
      const connection = this.#redis.duplicate();
      // Its failures come back from its commands (and redisReady); the event alone would be logged as unhandled.
      connection.on('error', () => {});
      try {
        if (!(await redisReady(connection, CONNECT_WAIT_MS))) throw new KeyStoreError(`${this.description}: redis cannot be reached; the keys were not changed`);
        for (let attempt = 0; attempt < 10; attempt++) {
          await connection.watch(this.#versionKey, this.#keysKey);
          let outcome: { keys: KeyRecord[]; result: T };
          try {
            outcome = change(parseRecords(await connection.hgetall(this.#keysKey), this.description));
          } catch (error) {
            await connection.unwatch();
            throw error;
          }
          const multi = connection.multi().del(this.#keysKey);
          if (outcome.keys.length > 0) {
            multi.hset(this.#keysKey, Object.fromEntries(outcome.keys.map((k) => [k.id, JSON.stringify(k)])));
          }
          const done = await multi.set(this.#versionKey, randomBytes(8).toString('hex')).exec();
          if (done !== null) return outcome.result;
        }
        throw new KeyStoreError('keys changed concurrently too often; try again');
      } finally {
        connection.disconnect();
      }
    });
  }

  async version(): Promise<string> {
    return (await this.#redis.get(this.#versionKey)) ?? '0';
  }
}

function parseRecords(fields: Record<string, string>, where: string): KeyRecord[] {
  const records: unknown[] = [];
  for (const [id, json] of Object.entries(fields)) {
    try {
      records.push(JSON.parse(json));
    } catch (error) {
      throw new KeyFileError(`${where}: record ${id} is not valid JSON`, { cause: error });
    }
  }
  return readKeyRecords(records, (why) => new KeyFileError(`${where}: ${why}`)).sort(byCreation);
}
