/**
 * A cluster drawn with Cytoscape.js: VPAs as circles coloured by risk
 * category and sized by confidence, urls as squares coloured by source
 * category, one edge per VPA and url seen together. Cytoscape is imported
 * here only, dynamically, so it is a chunk of its own loaded when a cluster
 * is opened.
 */
import type { Core, ElementDefinition, EventObjectNode } from 'cytoscape';
import type { ClusterGraph } from '../api/types.js';
import { riskColour, sourceColour } from './colours.js';

export interface DrawnCluster {
  /** From creating the graph to the second frame after layout: what a user waits for once the data is there. */
  readonly drawMs: number;
  /** Loading the Cytoscape chunk, before drawing. */
  readonly loadMs: number;
  readonly nodes: number;
  readonly edges: number;
  readonly destroy: () => void;
}

/**
 * Force-directed, but bounded: CoSE cools from 1,000 to 1 in steps of 0.9,
 * about 66 iterations where its default 0.99 runs about 690; 300 members are
 * drawn in about a quarter of the time, well under a second (measured with
 * bench/console/cluster-draw.ts). A concentric layout is faster still but
 * shows nothing of the cluster's structure.
 */
const LAYOUT = {
  name: 'cose',
  animate: false,
  randomize: true,
  fit: true,
  padding: 20,
  coolingFactor: 0.9,
  nodeRepulsion: () => 8000,
  idealEdgeLength: () => 40,
  componentSpacing: 60,
} as const;

/**
 * Cytoscape adds a <style> element to the page unless one with this id is
 * there; the CSP refuses inline styles, so a marker with the id stands in and
 * styles.css gives the container the `position: relative` it would set.
 */
const CYTOSCAPE_STYLESHEET_ID = '__________cytoscape_stylesheet';

function markCytoscapeStylesheet(): void {
  if (document.getElementById(CYTOSCAPE_STYLESHEET_ID) !== null) return;
  const marker = document.createElement('meta');
  marker.id = CYTOSCAPE_STYLESHEET_ID;
  document.head.append(marker);
}

export async function drawCluster(container: HTMLElement, graph: ClusterGraph, onMember: (upi: string) => void): Promise<DrawnCluster> {
  const loadStart = performance.now();
  const { default: cytoscape } = await import('cytoscape');
  const loadMs = performance.now() - loadStart;

  markCytoscapeStylesheet();
  const start = performance.now();
  const elements = graphElements(graph);
  const cy: Core = cytoscape({
    container,
    elements,
    style: [
      {
        selector: 'node',
        style: { 'background-color': 'data(colour)', width: 'data(size)', height: 'data(size)', 'border-width': 1, 'border-color': '#ffffff' },
      },
      {
        selector: 'node.vpa',
        // Labels at full size only: fitted to show a large cluster whole, they would cover it.
        style: { shape: 'ellipse', label: 'data(label)', 'font-size': 9, 'min-zoomed-font-size': 9, 'text-valign': 'bottom', 'text-margin-y': 2, color: '#222222' },
      },
      { selector: 'node.url', style: { shape: 'round-rectangle' } },
      { selector: 'edge', style: { width: 'data(width)', 'line-color': '#b8b8b8', 'curve-style': 'haystack', opacity: 0.8 } },
      { selector: 'node:selected', style: { 'border-width': 3, 'border-color': '#111111' } },
    ],
    layout: { name: 'preset' },
    minZoom: 0.1,
    maxZoom: 4,
    boxSelectionEnabled: false,
    autoungrabify: true,
  });
  cy.layout(LAYOUT).run();
  // A small cluster would be fitted at a zoom that blows its nodes up; it keeps their own size instead.
  if (cy.zoom() > 1) {
    cy.zoom(1);
    cy.center();
  }
  await nextFrame();
  await nextFrame();
  const drawMs = performance.now() - start;

  // Cytoscape types an event's target as any; with a node selector it is a node.
  cy.on('tap', 'node.vpa', (event: EventObjectNode) => onMember(String(event.target.data('upi'))));
  cy.on('mouseover', 'node', (event: EventObjectNode) => {
    container.title = String(event.target.data('title'));
  });
  cy.on('mouseout', 'node', () => {
    container.title = '';
  });

  return { drawMs, loadMs, nodes: cy.nodes().length, edges: cy.edges().length, destroy: () => cy.destroy() };
}

function graphElements(graph: ClusterGraph): ElementDefinition[] {
  const elements: ElementDefinition[] = [];
  const members = new Set<string>();
  for (const member of graph.members) {
    members.add(member.upi);
    elements.push({
      group: 'nodes',
      classes: 'vpa',
      data: {
        id: `v:${member.upi}`,
        upi: member.upi,
        label: member.upi,
        title: `${member.upi}: ${member.risk_category ?? 'no verdict'}, confidence ${member.confidence ?? 'none'}`,
        colour: riskColour(member.risk_category),
        // 10 to 34 px: a stronger case reads as a bigger dot.
        size: 10 + 24 * (member.confidence ?? 0),
      },
    });
  }
  const urls = new Set<string>();
  for (const url of graph.urls) {
    urls.add(url.url);
    elements.push({
      group: 'nodes',
      classes: 'url',
      data: { id: `u:${url.url}`, title: `${url.url} (${url.category})`, colour: sourceColour(url.category), size: 16 },
    });
  }
  // One edge per VPA and url, however many captures saw them together; thicker for more.
  const pairs = new Map<string, { upi: string; url: string; count: number }>();
  for (const sighting of graph.sightings) {
    if (!members.has(sighting.upi) || !urls.has(sighting.url)) continue;
    const id = `${sighting.upi}\n${sighting.url}`;
    const pair = pairs.get(id);
    if (pair === undefined) pairs.set(id, { upi: sighting.upi, url: sighting.url, count: 1 });
    else pair.count++;
  }
  for (const [id, pair] of pairs) {
    elements.push({
      group: 'edges',
      data: { id: `e:${id}`, source: `v:${pair.upi}`, target: `u:${pair.url}`, width: Math.min(4, 1 + Math.log2(pair.count)) },
    });
  }
  return elements;
}

function nextFrame(): Promise<void> {
  return new Promise((resolve) => requestAnimationFrame(() => resolve()));
}
