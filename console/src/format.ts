/** How the console writes numbers, sizes, durations and instants. */

const NUMBER = new Intl.NumberFormat('en-US');

export function formatNumber(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : NUMBER.format(value);
}

/** Confidences as the service writes them (up to four decimals); a dash for null. */
export function formatConfidence(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : String(value);
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatBytes(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  let scaled = value;
  let unit = 0;
  while (scaled >= 1024 && unit < BYTE_UNITS.length - 1) {
    scaled /= 1024;
    unit++;
  }
  return `${unit === 0 ? scaled : scaled.toFixed(1)} ${BYTE_UNITS[unit]}`;
}

export function formatSeconds(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (value < 90) return `${Math.round(value)} s`;
  if (value < 5400) return `${Math.round(value / 60)} min`;
  return `${(value / 3600).toFixed(1)} h`;
}

/** A duration given in milliseconds: ms below a second, else as formatSeconds writes it. */
export function formatMilliseconds(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return value < 1000 ? `${Math.round(value)} ms` : formatSeconds(value / 1000);
}

/** An instant in UTC, to the second: operators compare it with logs. */
export function formatInstant(iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return '—';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
