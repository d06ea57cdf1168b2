/**
 * glibc allocator settings the service is measured with (docs/operations.md,
 * Memory).
 * They can only be given in the environment before the process starts
 * (GLIBC_TUNABLES is read by the dynamic loader): the `upi-risk` command
 * (bin/upi-risk, which keeps its own copy of this list; a test holds the two
 * together) adds those missing before it runs Node.js, and `serve` says what
 * is missing when it was started some other way.
 *
 * - `hugetlb=1`: large allocations (the snapshot's typed arrays) are backed
 *   by transparent huge pages where the kernel allows, which takes most TLB
 *   misses out of index lookups.
 * - `mmap_threshold=131072`: fixes the size above which an allocation gets
 *   pages of its own. glibc raises that threshold each time such a block is
 *   freed, up to 32 MiB, after which the build threads' growing buffers come
 *   from arena heaps that freeing never returns to the system, and a
 *   serving process stays larger after its build threads exit (see
 *   bench/MEASUREMENTS.md, 'glibc allocator settings').
 */
export const RECOMMENDED_GLIBC_TUNABLES = ['glibc.malloc.hugetlb=1', 'glibc.malloc.mmap_threshold=131072'] as const;

/**
 * The recommended tunables that `tunables` (a GLIBC_TUNABLES value) does not
 * set to any value; none when the process does not run on glibc, where the
 * variable means nothing.
 */
export function missingGlibcTunables(tunables: string | undefined, onGlibc: boolean): string[] {
  if (!onGlibc) return [];
  const named = new Set((tunables ?? '').split(':').map((entry) => entry.split('=')[0]!.trim()));
  return RECOMMENDED_GLIBC_TUNABLES.filter((entry) => !named.has(entry.split('=')[0]!));
}

/** Whether this process runs on glibc (Node's report names the runtime's version there, not on musl). */
export function runsOnGlibc(): boolean {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return typeof header?.glibcVersionRuntime === 'string';
}
