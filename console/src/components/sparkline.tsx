/**
 * A small line chart of one series over time: an SVG polyline scaled to the
 * series' own range, named for assistive technology by its latest, lowest
 * and highest values.
 */
export interface SparklineProps {
  readonly title: string;
  /** Epoch ms and value, oldest first. */
  readonly points: readonly (readonly [number, number])[];
  readonly format: (value: number) => string;
  readonly width?: number;
  readonly height?: number;
}

export function Sparkline({ title, points, format, width = 240, height = 48 }: SparklineProps) {
  const values = points.map(([, value]) => value);
  const latest = values.at(-1);
  const low = Math.min(...values);
  const high = Math.max(...values);
  const summary =
    latest === undefined ? `${title}: no samples yet` : `${title}: latest ${format(latest)}, lowest ${format(low)}, highest ${format(high)}`;
  const first = points[0]?.[0] ?? 0;
  const last = points.at(-1)?.[0] ?? 1;
  const pad = 2;
  const x = (at: number) => pad + ((at - first) / Math.max(1, last - first)) * (width - 2 * pad);
  // A flat series sits in the middle rather than on an edge.
  const y = (value: number) => (high === low ? height / 2 : pad + (1 - (value - low) / (high - low)) * (height - 2 * pad));
  return (
    <figure class="sparkline">
      <figcaption>
        {title}: <strong>{latest === undefined ? '—' : format(latest)}</strong>
      </figcaption>
      <svg width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={summary}>
        <rect x="0" y="0" width={width} height={height} fill="#f6f7f9" />
        {points.length > 1 ? (
          <polyline fill="none" stroke="#2166ac" stroke-width="1.5" points={points.map(([at, value]) => `${x(at).toFixed(1)},${y(value).toFixed(1)}`).join(' ')} />
        ) : null}
      </svg>
    </figure>
  );
}
