/**
 * What lookups need from a key index, whatever its representation: the
 * compact hashed VpaIndex serves production, the Map-backed ReferenceIndex is
 * the obviously-correct model both are tested against.
 *
 * Keys are ASCII and matched case-insensitively (ASCII A-Z only); ids are
 * positions 0..size-1 in the order the keys were given.
 */
export interface KeyIndex {
  readonly size: number;
  /** The id of the key equal to `query` ignoring ASCII case, or NOT_FOUND (-1). */
  lookup(query: string): number;
  /** The stored (lower-cased) key of `id`; throws RangeError for an id outside 0..size-1. */
  keyOf(id: number): string;
}
