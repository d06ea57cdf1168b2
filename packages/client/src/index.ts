/**
 * @upi-risk/client: the TypeScript client of the upi-risk v1 API. No
 * runtime dependencies: the platform's fetch, AbortSignal and Web Crypto.
 * docs/client.md describes it.
 */
export type * from './wire.js';
