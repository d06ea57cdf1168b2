/**
 * Branded ordinals, so a slot of one table is never passed where another is
 * expected (a VPA ordinal is not a cluster ordinal, though both are numbers).
 */
declare const brand: unique symbol;
export type Brand<T, B extends string> = T & { readonly [brand]: B };

/** Position of a flagged VPA in the snapshot's per-VPA arrays. */
export type VpaId = Brand<number, 'VpaId'>;
/** Position of a url in the snapshot's url table. */
export type UrlId = Brand<number, 'UrlId'>;
/** Position of a cluster in the snapshot's cluster arrays (not its public number). */
export type ClusterOrdinal = Brand<number, 'ClusterOrdinal'>;
/** The public cluster number N of `MC-N`; stable across rebuilds. */
export type ClusterNumber = Brand<number, 'ClusterNumber'>;

/** Index lookups answer this for a VPA that is not in the snapshot. */
export const NOT_FOUND = -1;
