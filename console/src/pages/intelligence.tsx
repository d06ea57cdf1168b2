/**
 * Intelligence: the snapshot in service, the live delta, recent builds (or
 * publications, in the fleet), freshness, charts of the last hour
 * (refreshed every 15 s), the lookup of a data version served, evidence
 * upload, retraction of evidence, and the clearances of VPAs.
 */
import { useEffect } from 'preact/hooks';
import { fetchStats } from '../api/admin.js';
import type { Session, Stats, StatsSample } from '../api/types.js';
import { ClearanceList } from '../components/clearance-list.js';
import { ErrorMessage } from '../components/error-message.js';
import { CompactNow } from '../components/compact-now.js';
import { DataVersionLookup } from '../components/data-version-lookup.js';
import { EvidenceUpload } from '../components/evidence-upload.js';
import { PageHeading } from '../components/page-heading.js';
import { RetractEvidence } from '../components/retract-evidence.js';
import { Sparkline } from '../components/sparkline.js';
import { Time } from '../components/time.js';
import { formatBytes, formatMilliseconds, formatNumber, formatSeconds } from '../format.js';
import { useLoad } from '../use-load.js';
import { Table, numeric } from '../components/table.js';

const REFRESH_MS = 15_000;
const HOUR_MS = 3_600_000;

const SERIES: readonly { readonly field: keyof Omit<StatsSample, 'at'>; readonly title: string; readonly format: (value: number) => string }[] = [
  { field: 'requests_per_second', title: 'Requests a second', format: (value) => formatNumber(Math.round(value * 10) / 10) },
  { field: 'rate_limited_per_second', title: '429s a second', format: (value) => formatNumber(Math.round(value * 10) / 10) },
  { field: 'delta_vpas', title: 'VPAs in the live delta', format: formatNumber },
  { field: 'resident_bytes', title: 'Resident memory', format: formatBytes },
];

export function IntelligencePage({ session }: { readonly session: Session }) {
  const stats = useLoad((signal) => fetchStats(signal), []);

  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void stats.reload();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [stats.reload]);

  return (
    <>
      <PageHeading title="Intelligence" />
      <ErrorMessage message={stats.error} />
      {stats.data === null ? stats.loading ? <p role="status">Loading…</p> : null : <StatsView stats={stats.data} onCompaction={() => void stats.reload()} />}
      <DataVersionLookup />
      <EvidenceUpload onStored={() => void stats.reload()} />
      <RetractEvidence session={session} onRetracted={() => void stats.reload()} />
      <ClearanceList onEnded={() => void stats.reload()} />
    </>
  );
}

function StatsView({ stats, onCompaction }: { readonly stats: Stats; readonly onCompaction: () => void }) {
  const fleet = stats.mode !== 'embedded';
  return (
    <>
      <p>
        Mode <strong>{stats.mode}</strong>, serving data version <code>{stats.data_version}</code>. Refreshed every {REFRESH_MS / 1000} s.
      </p>
      <div class="cards">
        <section class="card" aria-labelledby="snapshot-title">
          <h2 id="snapshot-title">Snapshot</h2>
          <dl class="pairs">
            <dt>Id</dt>
            <dd>
              <code>{stats.snapshot.id}</code>
            </dd>
            <dt>As of</dt>
            <dd>
              <Time iso={stats.snapshot.as_of} />
            </dd>
            <dt>VPAs</dt>
            <dd>{formatNumber(stats.snapshot.vpas)}</dd>
            <dt>Clusters</dt>
            <dd>{formatNumber(stats.snapshot.clusters)}</dd>
          </dl>
        </section>
        <section class="card" aria-labelledby="delta-title">
          <h2 id="delta-title">Live delta</h2>
          <dl class="pairs">
            <dt>VPAs</dt>
            <dd>{formatNumber(stats.delta.vpas)}</dd>
            <dt>Evidence items</dt>
            <dd>{formatNumber(stats.delta.evidence_items)}</dd>
            <dt>Size</dt>
            <dd>{formatBytes(stats.delta.bytes)}</dd>
            <dt>Age</dt>
            <dd>{formatSeconds(stats.delta.age_seconds)}</dd>
            <dt>Since compaction</dt>
            <dd>{formatSeconds(stats.seconds_since_compaction)}</dd>
          </dl>
          {/* A follower builds nothing: the fleet's builder publishes. */}
          {fleet ? null : <CompactNow onStarted={onCompaction} />}
        </section>
        <section class="card" aria-labelledby="freshness-title">
          <h2 id="freshness-title">Freshness</h2>
          <dl class="pairs">
            <dt>Last ingest</dt>
            <dd>
              <Time iso={stats.freshness.last_ingest_at} />
            </dd>
            <dt>Items in it</dt>
            <dd>{formatNumber(stats.freshness.last_ingest_items)}</dd>
            <dt>Served after</dt>
            <dd>{formatMilliseconds(stats.freshness.last_ingest_served_ms)}</dd>
          </dl>
        </section>
      </div>

      <section aria-labelledby="charts-title">
        <h2 id="charts-title">The last hour</h2>
        <div class="charts">
          {SERIES.map((series) => (
            <Sparkline key={series.field} title={series.title} format={series.format} points={lastHour(stats.history.samples, series.field)} />
          ))}
        </div>
      </section>

      <section aria-labelledby="builds-title">
        <h2 id="builds-title">{fleet ? 'Recent publications' : 'Recent builds'}</h2>
        {stats.builds.length === 0 ? (
          <p>None since the server started.</p>
        ) : (
          <Table caption="Newest first" columns={['Finished', numeric('Took'), 'Outcome', 'Snapshot', 'Message']}>
            {stats.builds.map((build, index) => (
              <tr key={`${build.finished_at}-${index}`} class={build.outcome === 'failed' ? 'failed' : undefined}>
                <td>
                  <Time iso={build.finished_at} />
                </td>
                <td class="num">{formatMilliseconds(build.duration_ms)}</td>
                <td>{build.outcome}</td>
                <td>
                  <code>{build.snapshot ?? '—'}</code>
                </td>
                <td>{build.message ?? ''}</td>
              </tr>
            ))}
          </Table>
        )}
      </section>
    </>
  );
}

/** One series over the hour up to the newest sample. */
function lastHour(samples: readonly StatsSample[], field: keyof Omit<StatsSample, 'at'>): (readonly [number, number])[] {
  const points = samples.map((sample) => [Date.parse(sample.at), sample[field]] as const).filter(([at]) => !Number.isNaN(at));
  const newest = points.at(-1)?.[0];
  return newest === undefined ? [] : points.filter(([at]) => at >= newest - HOUR_MS);
}
