/**
 * The suite's report: every figure next to its target first, then the
 * detail tables. Markdown for people (bench/README.md, bench/results/*.md), the same
 * data as JSON for tools.
 */
import type { HttpResult, ScenarioResult, SwapResult } from './http/scenarios.js';
import type { MachineStallResult } from './machine-stall.bench.js';
import { medianBy, type Row } from './support/report.js';

export interface MicroResult {
  readonly file: string;
  readonly report: Record<string, unknown>;
}

export interface SuiteResult {
  readonly date: string;
  readonly machine: { readonly cores: number; readonly cpu: string; readonly memoryGiB: number; readonly node: string };
  readonly vpas: number;
  readonly options: Record<string, unknown>;
  engine: Record<string, unknown> | null;
  micro: MicroResult[];
  http: HttpResult[];
  swap: SwapResult | null;
  /** With the swap section: the machine's own stalls, from an idle process beside one touching fresh memory. */
  machineStall: MachineStallResult | null;
}

type Check = readonly [figure: string, target: string, measured: string, met: boolean | null];

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mark = (met: boolean | null) => (met === null ? 'reported' : met ? 'met' : '**missed**');

function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]) => `| ${cells.map(String).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function ratioRangeText(s: ScenarioResult): string {
  return s.rounds.length < 2 ? '1 round' : `${fmt(s.ratioRange[0] * 100, 1)}–${fmt(s.ratioRange[1] * 100, 1)}% over ${s.rounds.length} rounds`;
}

/** Median server CPU per request of the service and the ceiling, µs. */
function cpuPerRequestText(s: ScenarioResult): string {
  const medianOf = (values: (number | null)[]): number | null => {
    const known = values.filter((v): v is number => v !== null);
    return known.length === 0 ? null : medianBy(known, (v) => v);
  };
  const service = medianOf(s.rounds.map((r) => r.service.serverCpuUsPerRequest));
  const ceiling = medianOf(s.rounds.map((r) => r.ceiling.serverCpuUsPerRequest));
  if (service === null || ceiling === null) return 'unknown';
  return `${fmt(service, 1)} / ${fmt(ceiling, 1)} µs (${fmt(service / ceiling, 2)}×)`;
}

function checks(suite: SuiteResult): Check[] {
  const out: Check[] = [];
  for (const mode of suite.http) {
    const name = mode.tls ? 'TLS' : 'plain HTTP';
    const single = mode.scenarios.find((s) => s.scenario === 'single');
    if (single !== undefined) {
      out.push([
        `single lookup peak / ceiling (${name})`,
        '≥ 90%',
        `${fmt(single.ratio * 100, 1)}% (${fmt(single.service.requestsPerSecond)} / ${fmt(single.ceiling.requestsPerSecond)} req/s; ${ratioRangeText(single)})`,
        single.ratio >= 0.9,
      ]);
      const half = single.latency.find((l) => l.share === 0.5);
      if (half !== undefined) {
        out.push([`single p99 at 50% of peak (${name})`, '≤ 1 ms', `${half.service.p99} ms (ceiling ${half.ceiling.p99} ms)`, half.service.p99 <= 1]);
        out.push([`single p99.9 at 50% of peak (${name})`, '≤ 2 ms', `${half.service.p999} ms (ceiling ${half.ceiling.p999} ms)`, half.service.p999 <= 2]);
      }
    }
    const batch = mode.scenarios.find((s) => s.scenario === 'batch');
    if (batch !== undefined) {
      const perSecond = batch.service.requestsPerSecond * 100;
      out.push([`batch of 100, VPAs screened per second (${name})`, '≥ 1,000,000', fmt(perSecond), perSecond >= 1_000_000]);
    }
  }
  const engine = suite.engine as Record<string, number> | null;
  if (engine !== null) {
    const big = suite.vpas >= 10_000_000;
    out.push(['index + verdict fields per VPA', big ? '≤ 100 B' : '≤ 100 B (target at 10M)', `${engine.indexPlusFieldsBytesPerVpa} B`, engine.indexPlusFieldsBytesPerVpa! <= 100]);
    out.push(['snapshot load', big ? '≤ 3 s' : '≤ 3 s (target at 10M)', `${engine.loadS} s`, engine.loadS! <= 3]);
    out.push(['full build', big ? '≤ 120 s' : '≤ 120 s (target at 10M)', `${engine.buildS} s`, engine.buildS! <= 120]);
    const runs = engine.lookupHitRunMedianNs === undefined ? '' : ` (in runs of 100 back-to-back: ${engine.lookupHitRunMedianNs} / ${engine.lookupMissRunMedianNs} ns)`;
    out.push(['index lookup median, hit / miss', '≤ 300 ns', `${engine.lookupHitMedianNs} / ${engine.lookupMissMedianNs} ns${runs}`, Math.max(engine.lookupHitMedianNs!, engine.lookupMissMedianNs!) <= 300]);
  }
  const swap = suite.swap;
  if (swap !== null) {
    const machine = suite.machineStall === null ? '' : `; an idle process sharing nothing with the server: ${suite.machineStall.touchingStallMs} ms while another touches fresh memory`;
    out.push([
      'serving-thread stall over a rebuild, its swap and the release of the replaced snapshot',
      '≤ 5 ms',
      `${swap.stallMs} ms over ${swap.windowS} s (same load as long, no rebuild: ${swap.baselineStallMs} ms; the swap itself held the thread ${swap.swapMs} ms${machine})`,
      swap.stallMs <= 5,
    ]);
    out.push(['failed requests during the swap', '0', `${swap.failed} of ${fmt(swap.load.sent)}`, swap.failed === 0]);
    const atMillion = suite.vpas <= 1_000_000;
    const [first, next] = swap.idleFreshnessS;
    const slowest = Math.max(first, next);
    // Reports written before the bench waited for the previous build's file carry no previousWriteS.
    const waited =
      swap.previousWriteS === undefined
        ? ''
        : `; each ingest made once the build before had written its file, which took ${swap.previousWriteS.map((s) => `${s} s`).join(', ')} more, in the order the ingests came`;
    // Reports written before snapshots were laid out in reused memory carry no reusedMiB.
    const reused =
      swap.reusedMiB === undefined || swap.reusedMiB.every((mib) => mib === null)
        ? ''
        : `; of each rebuild's snapshot, ${swap.reusedMiB.map((mib) => `${mib ?? '?'} MiB`).join(', ')} laid out in a replaced snapshot's memory`;
    out.push([
      'freshness: ingest returns → verdict served',
      atMillion ? '≤ 5 s at 1M' : 'report at 10M',
      `${first} s and ${next} s idle, the first two rebuilds (then under the load ${swap.freshnessS} s${waited}${reused})`,
      atMillion ? slowest >= 0 && slowest <= 5 : null,
    ]);
  }
  return out;
}

function microRows(micro: readonly MicroResult[]): string {
  const rows: (string | number)[][] = [];
  for (const { file, report } of micro) {
    const list = (report.rows ?? report.index) as Row[] | undefined;
    if (Array.isArray(list)) {
      for (const row of list) rows.push([file, row.task, fmt(row['ops/s']), row['mean ns'], row['p50 ns'], row['p99 ns']]);
    } else {
      for (const [name, value] of Object.entries(report)) {
        if (typeof value === 'number') rows.push([file, name, String(value), '', '', '']);
      }
    }
  }
  return table(['bench', 'task', 'ops/s', 'mean ns', 'p50 ns', 'p99 ns'], rows);
}

export function renderMarkdown(suite: SuiteResult): string {
  const m = suite.machine;
  const parts: string[] = [];
  parts.push(`# upi-risk benchmarks, ${fmt(suite.vpas)} flagged VPAs`);
  parts.push(
    `${suite.date.slice(0, 10)} · ${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, Node ${m.node} · load generator on the same machine · options ${JSON.stringify(suite.options)}`,
  );
  parts.push('## Targets');
  parts.push(table(['figure', 'target', 'measured', ''], checks(suite).map(([f, t, v, met]) => [f, t, v, mark(met)])));

  for (const mode of suite.http) {
    const name = mode.tls ? 'TLS 1.3' : 'plain HTTP';
    parts.push(`## HTTP, ${name}: peak (wrk, ${suite.options.connections} connections), server on ${mode.serverThreads} thread(s), RSS ${fmt(mode.serverRssMiB)} MiB`);
    parts.push(
      table(
        [
          'scenario',
          'answer bytes',
          'service req/s',
          'ceiling req/s',
          'service / ceiling',
          'server CPU per request, service / ceiling',
          'ceiling with service headers',
          'non-2xx',
          'errors',
        ],
        mode.scenarios.map((s) => [
          s.scenario === 'batch' ? `batch of 100 (${fmt(s.service.requestsPerSecond * 100)} VPAs/s)` : s.scenario,
          fmt(s.bodyBytes),
          fmt(s.service.requestsPerSecond),
          fmt(s.ceiling.requestsPerSecond),
          `${fmt(s.ratio * 100, 1)}% (${ratioRangeText(s)})`,
          cpuPerRequestText(s),
          s.ceilingWithHeaders === null ? '' : `${fmt(s.ceilingWithHeaders.requestsPerSecond)} req/s (service at ${fmt((s.service.requestsPerSecond / s.ceilingWithHeaders.requestsPerSecond) * 100, 1)}%)`,
          s.rounds.reduce((sum, r) => sum + r.service.non2xx, 0),
          s.rounds.reduce((sum, r) => sum + r.service.errors, 0),
        ]),
      ),
    );
    parts.push(
      `Each scenario runs ${mode.scenarios[0]?.rounds.length ?? 0} rounds: wrk loads the service, then the ceiling (then, for single lookups, the ceiling writing the service's headers) for ${suite.options.seconds} s each. ` +
        "Rates are those of the round with the median service / ceiling ratio (the lower middle one for an even count); the range is the lowest and highest round's; non-2xx and errors are totals over all rounds. " +
        `Server CPU per request, the median over the rounds, is what the server process spent, all threads, user and kernel, divided by the requests answered: it depends far less than the rates on how the machine shares its ${suite.machine.cores} cores between the server and wrk, which moves the rates from run to run.`,
    );
    parts.push(`## HTTP, ${name}: latency at a constant rate (open loop), ms`);
    const rows: (string | number)[][] = [];
    for (const s of mode.scenarios) {
      for (const l of s.latency) {
        rows.push([
          s.scenario,
          `${l.share * 100}% (${fmt(l.rate)}/s)`,
          `${l.service.p50} / ${l.service.p99} / ${l.service.p999} / ${l.service.max}`,
          `${l.ceiling.p50} / ${l.ceiling.p99} / ${l.ceiling.p999} / ${l.ceiling.max}`,
          l.service.errors + l.service.non2xx,
          `${l.service.maxSendLag} / ${l.ceiling.maxSendLag}`,
        ]);
      }
    }
    parts.push(table(['scenario', 'rate (share of peak)', 'service p50 / p99 / p99.9 / max', 'ceiling p50 / p99 / p99.9 / max', 'failed', 'generator lag max, ms'], rows));
  }

  if (suite.swap !== null) {
    const s = suite.swap;
    parts.push('## Swap under load (plain HTTP, single lookups at half the peak)');
    parts.push(
      table(
        [
          'freshness under load (idle before it, twice)',
          'stall with swap',
          'window',
          'swap itself',
          'stall without',
          'requests',
          'failed',
          'p99 / p99.9 / max, ms',
          'generator lag max, ms',
          'resident after each rebuild, MiB',
        ],
        [
          [
            `${s.freshnessS} s (${s.idleFreshnessS[0]} s, ${s.idleFreshnessS[1]} s)`,
            `${s.stallMs} ms`,
            `${s.windowS} s`,
            `${s.swapMs} ms`,
            `${s.baselineStallMs} ms`,
            fmt(s.load.sent),
            s.failed,
            `${s.load.p99} / ${s.load.p999} / ${s.load.max}`,
            s.load.maxSendLag,
            s.residentMiB === undefined ? '' : s.residentMiB.map((mib) => fmt(mib)).join(', '),
          ],
        ],
      ),
    );
    const kept =
      s.buildIdleSeconds === 0
        ? 'with --build-idle-seconds 0, once the build threads had exited too'
        : `with --build-idle-seconds ${s.buildIdleSeconds ?? 'at its default'}`;
    const builtOn = s.buildThreads === undefined ? '' : `The server builds on ${s.buildThreads} background thread${s.buildThreads === 1 ? '' : 's'} (serve --build-threads). `;
    parts.push(
      `Measured once the server had read its stored evidence ahead of rebuilds (${s.readAheadS} s after it started serving). ` +
        builtOn +
        'Two ingests with no load come first (the first rebuild of the process, then a second); the swap under load is the third. ' +
        'The window with the swap runs from before the ingest until the replaced snapshot has been given back, plus a second; ' +
        'the window without runs as long, under the same load, after it, with the bench watching the server at least as much as during the swap ' +
        '(a CLI process started, then a verdict asked every 20 ms and /metrics read every 100 ms throughout). ' +
        'The open-loop generator times each request from when it was due, so time it fell behind its schedule (generator lag) counts as latency. ' +
        `Resident memory is read once each rebuild's file is written and the snapshot it replaced has been let go or handed to the next build, ${kept}; ` +
        'the third after the window without a rebuild.',
    );
  }
  if (suite.machineStall !== null) {
    const m = suite.machineStall;
    parts.push('## The machine\'s own stalls (machine-stall.bench.ts)');
    parts.push(
      'An idle process with a 1 ms timer, sharing nothing with the process beside it, which allocates and touches fresh memory as a build does:',
    );
    parts.push(
      table(
        ['longest stall, nothing else running', 'longest stall, while the other touches memory', 'memory touched', 'seconds per round'],
        [[`${m.idleStallMs} ms`, `${m.touchingStallMs} ms`, `${m.rounds} × ${m.gibPerRound} GiB`, m.roundSeconds.join(' ')]],
      ),
    );
    if (m.busyStallMs !== undefined) {
      parts.push(
        `The same idle process while the other keeps cores computing without pause at nice +10 (as build threads do) beside ${m.wakers} threads ` +
          `waking every millisecond (as the event-loop monitors of serve's main and serving threads do), ${m.busySeconds} s each:`,
      );
      parts.push(
        table(
          ['longest stall, every core computing', 'every core but one computing (serve\'s default build threads)'],
          [[`${m.busyStallMs.everyCore} ms`, `${m.busyStallMs.everyCoreButOne} ms`]],
        ),
      );
    }
  }

  if (suite.engine !== null) {
    parts.push('## Engine');
    parts.push(table(['figure', 'value'], Object.entries(suite.engine).map(([k, v]) => [k, String(v)])));
  }
  if (suite.micro.length > 0) {
    parts.push('## Micro benchmarks (tinybench)');
    parts.push(microRows(suite.micro));
    const headers = suite.micro.find((m) => m.file === 'answer-headers')?.report as
      | { headers: number; collections: Record<string, { scavenges: number; medianPauseMs?: number; meanPauseMs: number; maxPauseMs: number }> }
      | undefined;
    if (headers?.collections !== undefined) {
      parts.push(`Young-generation collections while answer-headers.bench.ts writes ${fmt(headers.headers)} answer heads, each with the next request id and remaining count:`);
      parts.push(
        table(
          ['numbers written by', 'scavenges', 'median pause, ms', 'mean, ms', 'longest, ms'],
          Object.entries(headers.collections).map(([name, c]) => [name, c.scavenges, c.medianPauseMs ?? '', c.meanPauseMs, c.maxPauseMs]),
        ),
      );
    }
  }
  return `${parts.join('\n\n')}\n`;
}
