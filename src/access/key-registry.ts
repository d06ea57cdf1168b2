import { ActiveKeys } from './active-keys.js';
import type { KeyBackend, KeyRecord } from './key-record.js';

/**
 * The server's view of the keys: the active keys (ActiveKeys), replaced
 * whole when the backend's version changes.
 */
export class KeyRegistry {
  readonly #active = new ActiveKeys();
  readonly #backend: KeyBackend;
  #signature = '';
  #timer: NodeJS.Timeout | null = null;
  #onError: (error: Error) => void;
  readonly #listeners: ((records: readonly KeyRecord[]) => void)[] = [];

  constructor(backend: KeyBackend, onError: (error: Error) => void = () => {}) {
    this.#backend = backend;
    this.#onError = onError;
  }

  /** Called with the active records after every reload that changed them (worker threads get them this way). */
  onChange(listener: (records: readonly KeyRecord[]) => void): void {
    this.#listeners.push(listener);
  }

  /** The active records now. */
  records(): KeyRecord[] {
    return this.#active.records();
  }

  get size(): number {
    return this.#active.size;
  }

  /** The active (not revoked) key record for a presented key, or null. */
  verify(presentedKey: string): KeyRecord | null {
    return this.#active.verify(presentedKey);
  }

  /** Load the file now; later changes are picked up by `watch`. Throws on an invalid file at start-up. */
  async load(): Promise<void> {
    await this.#reload(true);
  }

  /** Re-read the file whenever its size or modification time changes; `intervalMs` bounds the delay. */
  watch(intervalMs = 250): void {
    const tick = () => {
      this.#reload(false)
        .catch((error: Error) => this.#onError(error))
        .finally(() => {
          if (this.#timer !== null) this.#timer = setTimeout(tick, intervalMs).unref();
        });
    };
    this.#timer = setTimeout(tick, intervalMs).unref();
  }

  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  async #reload(force: boolean): Promise<void> {
    const signature = await this.#backend.version();
    if (!force && signature === this.#signature) return;
    // A bad file (edited by hand, say) or an unreachable store keeps the previous keys in force rather than locking everyone out.
    this.#active.replace(await this.#backend.read());
    this.#signature = signature;
    const active = this.#active.records();
    for (const listener of this.#listeners) listener(active);
  }
}
