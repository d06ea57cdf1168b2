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
  /** Whether the keys were read once. */
  #loaded = false;
  #timer: NodeJS.Timeout | null = null;
  #onError: (error: Error) => void;
  /** The last reload's failure: the same one again (a store down for a while) is reported once. */
  #failing: string | null = null;
  /** A look running; a check asked for meanwhile runs once more after it (the change may have come after it read the version). */
  #reloading: Promise<void> | null = null;
  /** The look queued behind the running one, shared by every check asked for meanwhile. */
  #queued: Promise<void> | null = null;
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

  /**
   * Whether the key with this id is active: what it made (watchlists) acts
   * for it only while it is. True of every id until the keys are first
   * read, so that a store unreachable at start revokes nothing.
   */
  isActive(id: string): boolean {
    return !this.#loaded || this.#active.hasId(id);
  }

  /** The active (not revoked) key record for a presented key, or null. */
  verify(presentedKey: string): KeyRecord | null {
    return this.#active.verify(presentedKey);
  }

  /** Load the file now; later changes are picked up by `watch`. Throws on an invalid file at start-up. */
  async load(): Promise<void> {
    await this.#reload(true);
  }

  /** Reload whenever the backend's version changes, looking every `intervalMs` (and at every `check`). */
  watch(intervalMs = 250): void {
    const tick = () => {
      void this.check().finally(() => {
        if (this.#timer !== null) this.#timer = setTimeout(tick, intervalMs).unref();
      });
    };
    this.#timer = setTimeout(tick, intervalMs).unref();
  }

  /**
   * Look at the backend's version now and reload if it changed (a backend
   * that announces changes calls this, and so does a change made here). The
   * promise settles after a look that started after this call, so a change
   * made before it is in force once it resolves. Calls while a look runs
   * share one more look after it. A failure goes to `onError`, once until a
   * look succeeds again; the keys in force stay.
   */
  check(): Promise<void> {
    if (this.#queued !== null) return this.#queued;
    if (this.#reloading !== null) {
      const queued = this.#reloading.then(() => {
        this.#queued = null;
        return this.#look();
      });
      this.#queued = queued;
      return queued;
    }
    return this.#look();
  }

  #look(): Promise<void> {
    const look = this.#reload(false)
      .then(
        () => {
          this.#failing = null;
        },
        (error: Error) => {
          if (error.message !== this.#failing) this.#onError(error);
          this.#failing = error.message;
        },
      )
      .finally(() => {
        this.#reloading = null;
      });
    this.#reloading = look;
    return look;
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
    this.#loaded = true;
    const active = this.#active.records();
    for (const listener of this.#listeners) listener(active);
  }
}
