/**
 * How long the console takes to draw one cluster graph in Chromium: a
 * cluster of --members VPAs (default 400) seen on chained pages, served by a
 * real `serve` process over TLS, opened --rounds times in the console.
 *
 *   npm run build:ts && npm run build:console
 *   node dist/bench/console/cluster-draw.bench.js [--members 400] [--rounds 6] [--json FILE]
 *
 * The draw time is what the page records on the graph's container
 * (`data-draw-ms`): from creating the Cytoscape graph, through the layout,
 * to the second animation frame after it; `data-load-ms` is loading the
 * Cytoscape chunk before that (the first round loads it over the network,
 * later ones from the module cache). Rounds reload the page, so each draws
 * from scratch. The target: well under a second for 300 members.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { launchChromium, signIn, startConsoleServer } from '../../test/fixtures/console-browser.js';
import { medianBy, round1, wholeNumberOption, writeBenchReport } from '../support/report.js';

const { values } = parseArgs({
  options: {
    members: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '6' },
    json: { type: 'string' },
  },
});
const members = wholeNumberOption('members', values.members, 2);
const rounds = wholeNumberOption('rounds', values.rounds);

/** Members per page, and how many each page shares with the next, so the chain is one cluster. */
const PAGE_MEMBERS = 25;
const PAGE_OVERLAP = 5;
const RISKS = ['mule', 'gambling', 'phishing', 'scam', 'nbfc_impersonation'];
const SOURCES = ['gambling', 'telegram', 'scam', 'phishing'];

/** One cluster: page j lists members from j*20 to j*20+24, so consecutive pages share five. */
function clusterEvidence(count: number): string {
  const lines: string[] = [];
  const step = PAGE_MEMBERS - PAGE_OVERLAP;
  for (let page = 0; page * step < count; page++) {
    const url = `https://bench-${page}.example/pay`;
    for (let member = page * step; member < Math.min(count, page * step + PAGE_MEMBERS); member++) {
      const day = 1 + ((member * 7 + page) % 28);
      lines.push(
        JSON.stringify({
          evidence_id: `bench-${page}-${member}`,
          upi: `bench.member${member}@ybl`,
          url,
          source_category: SOURCES[page % SOURCES.length],
          risk_category: RISKS[member % RISKS.length],
          captured_at: `2026-10-${String(day).padStart(2, '0')}T10:00:00Z`,
        }),
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

const service = await startConsoleServer((file) => writeFile(file, clusterEvidence(members)));
const browser = await launchChromium();
try {
  const largest = await service.request('/v1/admin/clusters?limit=1', { key: service.adminKey });
  const cluster = (largest.body.clusters as { cluster_id: string; size: number }[] | undefined)?.[0];
  if (cluster === undefined) throw new Error(`no cluster listed: HTTP ${largest.status} ${JSON.stringify(largest.body)}`);
  if (cluster.size < members) throw new Error(`the largest cluster has ${cluster.size} members, not ${members}`);

  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1360, height: 900 } });
  const page = await context.newPage();
  await signIn(page, service.base, service.adminKey);
  await page.getByRole('button', { name: 'Sign out' }).waitFor();

  const runs: { round: number; drawMs: number; loadMs: number }[] = [];
  for (let round = 1; round <= rounds; round++) {
    await page.goto(`${service.base}/console/clusters/${cluster.cluster_id}`);
    const graph = page.getByRole('img', { name: /Graph of cluster/ });
    await page.locator('[data-draw-ms]').waitFor({ timeout: 60_000 });
    runs.push({ round, drawMs: Number(await graph.getAttribute('data-draw-ms')), loadMs: Number(await graph.getAttribute('data-load-ms')) });
  }
  console.table(runs);
  const median = medianBy(runs, (run) => run.drawMs);
  const result = {
    members: cluster.size,
    cluster: cluster.cluster_id,
    rounds,
    draw_ms_median: round1(median.drawMs),
    draw_ms_min: round1(Math.min(...runs.map((run) => run.drawMs))),
    draw_ms_max: round1(Math.max(...runs.map((run) => run.drawMs))),
    first_chunk_load_ms: round1(runs[0]!.loadMs),
    runs,
  };
  console.log(`cluster of ${cluster.size} members: drawn in ${result.draw_ms_median} ms (median of ${rounds}; ${result.draw_ms_min} to ${result.draw_ms_max} ms)`);
  if (values.json !== undefined) writeBenchReport(values.json, 'console-cluster-draw', null, result);
  await context.close();
} finally {
  await browser.close();
  await service.stop();
}
