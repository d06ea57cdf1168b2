/**
 * A paginated listing: awaited, it is one page (from the cursor given);
 * iterated with `for await`, it is every page from that cursor to the last.
 */
import { ResponseFormatError } from './errors.js';

export interface Page {
  readonly next_cursor: string | null;
}

export class PageQuery<P extends Page> implements PromiseLike<P>, AsyncIterable<P> {
  readonly #fetchPage: (cursor: string | undefined) => Promise<P>;
  readonly #cursor: string | undefined;
  #first: Promise<P> | undefined;

  constructor(fetchPage: (cursor: string | undefined) => Promise<P>, cursor: string | undefined) {
    this.#fetchPage = fetchPage;
    this.#cursor = cursor;
  }

  then<A = P, B = never>(
    onFulfilled?: ((page: P) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.#first ??= this.#fetchPage(this.#cursor);
    return this.#first.then(onFulfilled, onRejected);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<P> {
    let cursor = this.#cursor;
    for (;;) {
      const page = await this.#fetchPage(cursor);
      yield page;
      if (page.next_cursor === null || page.next_cursor === undefined) return;
      // A cursor that does not move would page forever.
      if (page.next_cursor === cursor) throw new ResponseFormatError(`the cursor ${cursor} pointed back to itself`);
      cursor = page.next_cursor;
    }
  }
}
