import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { HttpError, badRequest } from '../api/http-error.js';

/**
 * How much of a body past MAX_BODY_BYTES is read and dropped so that
 * the client can read its 400: a client that sends its whole body before
 * reading (fetch does) is otherwise cut off by a reset that discards the
 * answer unread. A body larger than this has its connection closed.
 */
export const MAX_DISCARDED_BODY_BYTES = 8 * 1024 * 1024;

/**
 * How long a chunked body past its cap may pause before it is refused
 * anyway, with its connection closed. Its length is unknown, so it is read
 * and dropped meanwhile, and refused at its end (the connection then serves
 * on) or at the discard limit: but a client may stop sending and wait for
 * the answer, and the refusal cannot wait for an end that never comes. A
 * client still sending is not cut off: each chunk starts the wait again. uWS
 * cannot close a connection after its answer, and after an answer reads and
 * drops the rest of a chunked body without a bound, so a body that has not
 * ended is answered with its connection closed.
 */
export const CHUNKED_OVERFLOW_WAIT_MS = 250;

/**
 * Whether a header value is visible ASCII with spaces or tabs between
 * (RFC 9110 field-value, without obs-text). uWS hands values over as latin1
 * text, so a byte of 0x80 or more is one character of 0x80 or more here.
 * uWS strips such bytes, as whitespace, from both ends of a value before the
 * service sees it; the ones in between are refused.
 */
export function isHeaderText(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x21 || c > 0x7e) && c !== 0x20 && c !== 0x09) return false;
  }
  return true;
}

/** Whether a Content-Type header names `mediaType` (parameters such as charset allowed). */
export function isContentType(value: string, mediaType: string): boolean {
  if (!isHeaderText(value)) return false;
  const semicolon = value.indexOf(';');
  const type = (semicolon < 0 ? value : value.slice(0, semicolon)).trim().toLowerCase();
  return type === mediaType;
}

/**
 * Collect the body, refusing it once it passes `limit` (nothing past the cap
 * is kept). A refused body is still read and dropped up to `discardLimit`,
 * so that the client, which may be sending it all before it reads, gets the
 * answer (a declared Content-Length over the cap is refused at once, and uWS
 * drops the declared rest itself); past `discardLimit` the refusal closes the
 * connection. A chunked body past the cap that pauses for
 * CHUNKED_OVERFLOW_WAIT_MS without ending is refused then, closing the
 * connection. uWS
 * reuses the chunk memory after the callback, so each chunk is copied once,
 * and the whole body concatenated once at the end.
 *
 * Once `refused` resolves to true (the caller was refused while the body
 * arrives), what came is let go and the rest is read without being kept:
 * an unauthenticated client makes the server hold none of its body.
 */
export function readBody(res: HttpResponse, limit: number, discardLimit: number, declaredLength: string, refused?: Promise<boolean>): Promise<Buffer | HttpError> {
  return new Promise((resolve) => {
    const tooLarge = (close: boolean) => badRequest(`request body larger than ${limit} bytes`, close);
    if (declaredLength !== '') {
      if (!isDigits(declaredLength)) {
        res.onData(() => {});
        resolve(badRequest('Content-Length must be a decimal number of bytes', true));
        return;
      }
      const declared = Number(declaredLength);
      if (declared === 0) {
        // uWS never calls onData for an empty body whose head came in more
        // than one read: nothing is to come, so waiting would hang the request.
        resolve(EMPTY_BODY);
        return;
      }
      if (declared > limit) {
        res.onData(() => {});
        resolve(tooLarge(declared > discardLimit));
        return;
      }
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let finished = false;
    let dropping = false;
    let overflowWait: NodeJS.Timeout | undefined;
    void refused?.then((yes) => {
      if (!yes) return;
      dropping = true;
      chunks.length = 0;
    });
    res.onData((chunk, isLast) => {
      if (finished) return;
      size += chunk.byteLength;
      if (size > limit) {
        // Past the cap (a chunked body): dropped from here on, and refused at its end, at the discard limit, or after the wait.
        chunks.length = 0;
        if (size > discardLimit || isLast) {
          finished = true;
          clearTimeout(overflowWait);
          resolve(tooLarge(!isLast));
        } else if (overflowWait === undefined) {
          // Made only past the cap: a body within it allocates nothing more.
          overflowWait = setTimeout(() => {
            finished = true;
            resolve(tooLarge(true));
          }, CHUNKED_OVERFLOW_WAIT_MS);
        } else {
          // Still arriving: a client sending steadily is read to its end or the discard limit, not cut off mid-upload.
          overflowWait.refresh();
        }
        return;
      }
      if (dropping) {
        // Answered with its refusal once the body has come (within the same bounds); nothing of it is kept meanwhile.
        if (isLast) {
          finished = true;
          resolve(EMPTY_BODY);
        }
        return;
      }
      // Buffer.from of a view copies it (into the shared pool, for a small chunk).
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) {
        finished = true;
        resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
      }
    });
  });
}

/**
 * Whether a Content-Length header declares a body readDeclaredBody can
 * read: decimal digits, from 1 to `limit` bytes. Any other (absent, empty,
 * malformed or past the cap) is readBody's to take and answer.
 */
export function isDeclaredWithin(declaredLength: string, limit: number): boolean {
  if (!isDigits(declaredLength)) return false;
  const declared = Number(declaredLength);
  return declared > 0 && declared <= limit;
}

/**
 * readBody for the common case, without its promises: a body whose length
 * isDeclaredWithin accepted, from a caller admitted already. uWS frames the
 * body by that length, so no more can arrive; `then` gets it whole within
 * uWS's data callback, each chunk copied once as readBody copies it. Not
 * called if the client goes away first.
 */
export function readDeclaredBody(res: HttpResponse, then: (body: Buffer) => void): void {
  let chunks: Buffer[] | null = null;
  res.onData((chunk, isLast) => {
    const copy = Buffer.from(new Uint8Array(chunk));
    if (isLast && chunks === null) return then(copy);
    (chunks ??= []).push(copy);
    if (isLast) then(Buffer.concat(chunks));
  });
}

const EMPTY_BODY = Buffer.alloc(0);

function isDigits(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return text.length > 0;
}

/**
 * Close, unread and unanswered, a request whose body has no single length
 * (RFC 9112, 6.3): two Content-Length fields (uWS takes the first, a proxy
 * may take the last), or Content-Length beside Transfer-Encoding. A proxy
 * in front that reads such a request otherwise could smuggle a second one
 * in its body, and uWS would go on to read it from the same bytes even
 * after an answer that closes the connection. Returns whether it closed;
 * every handler that reads a body asks first.
 */
export function closedForAmbiguousLength(res: HttpResponse, req: HttpRequest): boolean {
  let lengths = 0;
  let transferEncoding = false;
  req.forEach((name) => {
    if (name === 'content-length') lengths++;
    else if (name === 'transfer-encoding') transferEncoding = true;
  });
  if (lengths < 2 && !(lengths === 1 && transferEncoding)) return false;
  res.close();
  return true;
}
