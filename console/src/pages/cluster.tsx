/**
 * One cluster: its summary, the graph of members and urls (Cytoscape, loaded
 * on this page only) with a legend, and the member table beside it. A member
 * (a node or a row) opens its verdict on the Screen page.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../../../src/vpa/categories.js';
import { fetchClusterGraph } from '../api/admin.js';
import { describeError } from '../api/client.js';
import type { ClusterGraph } from '../api/types.js';
import { ErrorMessage } from '../components/error-message.js';
import { ExternalLink } from '../components/external-link.js';
import { MemberTable } from '../components/member-table.js';
import { PageHeading } from '../components/page-heading.js';
import { Time } from '../components/time.js';
import { formatConfidence, formatNumber } from '../format.js';
import { RISK_COLOURS, SOURCE_COLOURS } from '../graph/colours.js';
import { drawCluster } from '../graph/draw-cluster.js';
import { navigate, screenPath } from '../router.js';
import { useLoad } from '../use-load.js';
import { Table, numeric } from '../components/table.js';

export function ClusterPage({ clusterId }: { readonly clusterId: string }) {
  const graph = useLoad((signal) => fetchClusterGraph(clusterId, signal), [clusterId]);
  return (
    <>
      <PageHeading title={`Cluster ${clusterId}`} />
      <ErrorMessage message={graph.error} />
      {graph.data === null ? graph.loading ? <p role="status">Loading the cluster…</p> : null : <ClusterView graph={graph.data} />}
    </>
  );
}

function ClusterView({ graph }: { readonly graph: ClusterGraph }) {
  const { cluster } = graph;
  const shown = graph.members.length;
  return (
    <>
      <dl class="pairs summary">
        <dt>Size</dt>
        <dd>{formatNumber(cluster.size)} VPAs</dd>
        <dt>Risk category</dt>
        <dd>{cluster.risk_category}</dd>
        <dt>Confidence</dt>
        <dd>{formatConfidence(cluster.confidence)}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={cluster.created_at} />
        </dd>
        <dt>Last updated</dt>
        <dd>
          <Time iso={cluster.last_updated} />
        </dd>
        <dt>Evidence items</dt>
        <dd>{formatNumber(cluster.total_evidence_count)}</dd>
      </dl>
      {cluster.size > shown ? (
        <p class="note">
          The graph and table show {formatNumber(shown)} of the cluster’s {formatNumber(cluster.size)} members.
        </p>
      ) : null}
      <div class="cluster-layout">
        <GraphPanel graph={graph} />
        <MemberTable members={graph.members} caption={`Members (${formatNumber(shown)})`} />
      </div>
      {cluster.top_sources.length === 0 ? null : (
        <Table caption="Top sources" columns={['URL', 'Category', numeric('Members on it')]}>
          {cluster.top_sources.map((source) => (
            <tr key={source.url}>
              <td class="url">
                <ExternalLink url={source.url} />
              </td>
              <td>{source.category}</td>
              <td class="num">{formatNumber(source.member_count)}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

type Drawing = { readonly kind: 'drawing' } | { readonly kind: 'drawn'; readonly drawMs: number; readonly nodes: number; readonly edges: number } | { readonly kind: 'failed'; readonly message: string };

function GraphPanel({ graph }: { readonly graph: ClusterGraph }) {
  const container = useRef<HTMLDivElement>(null);
  const [drawing, setDrawing] = useState<Drawing>({ kind: 'drawing' });

  useEffect(() => {
    const element = container.current!;
    let destroy: (() => void) | null = null;
    let cancelled = false;
    setDrawing({ kind: 'drawing' });
    element.removeAttribute('data-draw-ms');
    drawCluster(element, graph, (upi) => navigate(screenPath(upi))).then(
        (drawn) => {
          if (cancelled) return drawn.destroy();
          destroy = drawn.destroy;
          // Read by bench/console/cluster-draw.ts.
          element.dataset.drawMs = drawn.drawMs.toFixed(1);
          element.dataset.loadMs = drawn.loadMs.toFixed(1);
          setDrawing({ kind: 'drawn', drawMs: drawn.drawMs, nodes: drawn.nodes, edges: drawn.edges });
        },
        (error: unknown) => {
          if (!cancelled) setDrawing({ kind: 'failed', message: `The graph could not be drawn: ${describeError(error)}` });
        },
      );
    return () => {
      cancelled = true;
      destroy?.();
    };
  }, [graph]);

  return (
    <figure class="graph-panel">
      <div
        ref={container}
        class="graph"
        role="img"
        aria-label={`Graph of cluster ${graph.cluster.cluster_id}: ${graph.members.length} VPAs and ${graph.urls.length} pages they were seen on. The member table lists the same VPAs.`}
      />
      <figcaption>
        <Legend />
        <p role="status" class="muted">
          {drawing.kind === 'drawing'
            ? 'Drawing the graph…'
            : drawing.kind === 'drawn'
              ? `${formatNumber(drawing.nodes)} nodes and ${formatNumber(drawing.edges)} edges drawn in ${Math.round(drawing.drawMs)} ms. Select a VPA to open its verdict.`
              : ''}
        </p>
        <ErrorMessage message={drawing.kind === 'failed' ? drawing.message : null} />
      </figcaption>
    </figure>
  );
}

function Legend() {
  return (
    <div class="legend">
      <ul aria-label="VPA colours: risk category; size: confidence">
        {RISK_CATEGORIES.map((category) => (
          <li key={category}>
            <svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true">
              <circle cx="6" cy="6" r="5" fill={RISK_COLOURS[category]} />
            </svg>{' '}
            {category}
          </li>
        ))}
      </ul>
      <ul aria-label="Page colours: source category">
        {SOURCE_CATEGORIES.map((category) => (
          <li key={category}>
            <svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true">
              <rect x="1" y="1" width="10" height="10" rx="2" fill={SOURCE_COLOURS[category]} />
            </svg>{' '}
            {category} page
          </li>
        ))}
      </ul>
    </div>
  );
}
