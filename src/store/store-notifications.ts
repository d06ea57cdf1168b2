import pg from 'pg';
import { beforeDeadline } from '../common/deadline.js';
import type { Logger } from '../common/logger.js';
import { KEEP_ALIVE, dropConnection, redactStoreUrl, schemaIdentifier, type StoreLocation } from './postgres.js';

const HEARTBEAT_MS = 30_000;

/**
 * LISTEN on the store's channels with a connection of its own, connected
 * again whenever it drops (PostgreSQL restarted, the network cut). Each
 * notification calls `onNotify`; so does every reconnection, since what was
 * announced while the connection was down is lost. Callers also poll: a
 * notification only makes them look sooner.
 *
 * A listening connection is idle, so one a failover or a firewall left half
 * open would never hear of it: every `heartbeatMs` it is asked a `SELECT 1`,
 * and one that does not answer within a third of that is dropped and
 * connected again.
 */
export class StoreNotifications {
  readonly #location: StoreLocation;
  readonly #channels: readonly string[];
  readonly #onNotify: (channel: string) => void;
  readonly #logger: Logger;
  #client: pg.Client | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #failures = 0;
  readonly #heartbeat: NodeJS.Timeout;

  constructor(location: StoreLocation, channels: readonly string[], onNotify: (channel: string) => void, logger: Logger, heartbeatMs = HEARTBEAT_MS) {
    this.#location = location;
    this.#channels = channels;
    this.#onNotify = onNotify;
    this.#logger = logger;
    this.#heartbeat = setInterval(() => void this.#beat(heartbeatMs / 3), heartbeatMs);
    this.#heartbeat.unref();
    void this.#connect();
  }

  /** Ask the listening connection something; drop it when no answer comes within `withinMs`. */
  async #beat(withinMs: number): Promise<void> {
    const client = this.#client;
    if (client === null) return;
    // An error is an answer too: the connection's own end reconnects it.
    const answered = await beforeDeadline(client.query('SELECT 1').then(() => true, () => true), withinMs, 'no answer').catch(() => false);
    if (!answered && this.#client === client) {
      this.#logger.warn({ store: redactStoreUrl(this.#location.url), withinMs }, 'the store did not answer the listening connection; connecting again');
      dropConnection(client);
    }
  }

  /** Whether the listening connection is up now. */
  get listening(): boolean {
    return this.#client !== null;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    if (this.#timer !== null) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    this.#timer = null;
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.#location.url, connectionTimeoutMillis: 5_000, application_name: 'upi-risk listen', ...KEEP_ALIVE });
    // Errors after connecting (the server gone) arrive here and as 'end'; 'end' reconnects.
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query(`SET search_path TO ${schemaIdentifier(this.#location)}`);
      for (const channel of this.#channels) await client.query(`LISTEN "${channel}"`);
    } catch (error) {
      await client.end().catch(() => {});
      this.#retry(error);
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => {});
      return;
    }
    client.on('notification', (message) => this.#onNotify(message.channel));
    client.once('end', () => {
      if (this.#client !== client) return;
      this.#client = null;
      this.#retry(new Error('connection ended'));
    });
    this.#client = client;
    if (this.#failures > 0) this.#logger.info({ store: redactStoreUrl(this.#location.url) }, 'listening to the store again');
    this.#failures = 0;
    // Anything announced while not listening was missed: look now.
    for (const channel of this.#channels) this.#onNotify(channel);
  }

  #retry(error: unknown): void {
    if (this.#closed) return;
    // Logged once per outage; the poll covers the time until it is back.
    if (this.#failures === 0) {
      this.#logger.warn({ store: redactStoreUrl(this.#location.url), err: (error as Error).message }, 'not listening to the store; polling until it is back');
    }
    this.#failures++;
    const delay = Math.min(5_000, 250 * 2 ** Math.min(this.#failures, 5));
    this.#timer = setTimeout(() => void this.#connect(), delay);
    this.#timer.unref();
  }
}
