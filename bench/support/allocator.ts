import { missingGlibcTunables } from '../../src/common/malloc-tuning.js';

/**
 * Gives every server a bench starts the allocator settings the service runs
 * with (docs/operations.md, "Memory"), as the `upi-risk` command does,
 * beside whatever the caller set: a server started without them holds
 * gigabytes more at 10M, which would be measured as the code's.
 */
export function useServiceAllocatorSettings(): void {
  const missing = missingGlibcTunables(process.env.GLIBC_TUNABLES, true);
  if (missing.length > 0) process.env.GLIBC_TUNABLES = [process.env.GLIBC_TUNABLES, ...missing].filter(Boolean).join(':');
}
