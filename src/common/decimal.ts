/**
 * Decimal text of whole numbers that change from one request to the next,
 * written without V8's number-to-string cache.
 *
 * `String(n)`, `n.toString()` and template literals remember the text of
 * every number they convert in one heap-wide table (the number-string
 * cache, thousands of entries). A number that is new on every answer, such
 * as a key's remaining quota in X-RateLimit-Remaining, puts a fresh string
 * into that table on every answer, and the table keeps it alive: every
 * scavenge then finds thousands of such strings still reachable, copies
 * them and promotes them to the old generation, where they wait for a full
 * collection. Under single-lookup load that made every scavenge of a
 * serving thread copy far more, and pause far longer, than with the header
 * written through `decimalText` (bench/MEASUREMENTS.md, 'The request path:
 * allocation and native calls'). Strings built here are joined from a fixed table
 * and never enter the cache, so they die young like the rest of an answer.
 * (The header lines are now written as bytes, numbers digit by digit,
 * byte-scratch.ts; cluster ids in answers still come from here.)
 *
 * Numbers with few distinct values (counts, confidences, years) stay on the
 * cache: they hit it, and that is what it is for.
 */

/** Texts of 0..999, and the same padded to three digits ("007"). */
const PLAIN = Array.from({ length: 1000 }, (_, i) => String(i));
const PADDED = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/**
 * `String(n)` for any number; for whole numbers from 0 to
 * Number.MAX_SAFE_INTEGER the text is assembled from three-digit groups
 * instead of being converted (and cached) by the engine.
 */
export function decimalText(n: number): string {
  if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER) || !Number.isInteger(n)) return String(n);
  if (n < 1000) return PLAIN[n]!;
  const low = n % 1000;
  const high = (n - low) / 1000;
  if (high < 1000) return `${PLAIN[high]!}${PADDED[low]!}`;
  const middle = high % 1000;
  const top = (high - middle) / 1000;
  // Up to a billion, as most counts and Unix seconds are, in one join; past it, by recursion.
  return `${top < 1000 ? PLAIN[top]! : decimalText(top)}${PADDED[middle]!}${PADDED[low]!}`;
}
