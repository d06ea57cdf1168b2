/**
 * Two (or more) server command lines against each other and the bare
 * ceiling, in alternated rounds in one run: wrk peaks of single lookups
 * (and batches) and the CPU each server process spent per request. For
 * comparing builds of the service, such as the code before a change in a
 * worktree of its own against the code after it.
 *
 *   node dist/bench/http/compare-servers.js --data-dir var/bench/vpas-1000000/data --token KEY \
 *     --server 'old=node /work/wt-old/dist/src/cli/main.js serve --data-dir DIR --plain-http --port 0 ...' \
 *     --server 'new=node dist/src/cli/main.js serve --data-dir DIR --plain-http --port 0 ...' \
 *     [--scenarios single,batch] [--rounds 5] [--seconds 10] [--connections 64] [--threads N] [--json FILE]
 *
 * Each command runs through `sh -c 'exec ...'` in a session of its own (as
 * startService runs the service) and must print `listening on
 * http://host:port`. The request lists are drawn from the snapshot in
 * --data-dir (every server must hold the same VPAs) and the key in --token
 * must be valid for every server. Before anything is measured each server
 * has read its stored evidence (upi_risk_build_carried_bytes above 0 on
 * /metrics, asked from loopback) and is warmed by a run as long as a
 * measurement. In each round the servers go in turn, the order rotating
 * from round to round, then the ceiling.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dataDir as openDataDir } from '../../src/common/data-dir.js';
import { loadNewestValidSnapshot } from '../../src/engine/snapshot-files.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { useServiceAllocatorSettings } from '../support/allocator.js';
import { medianBy, round3, wholeNumberOption } from '../support/report.js';
import { requireWrk } from './load-tools.js';
import { bodyBytesOf, evidenceRead, namedCommand, rotatedPeakRounds, sleep, startBare, targetFor, type BareServer, type NamedCommand, type RotatedRound } from './scenarios.js';
import { writeWorkload } from './workload.js';

const { values: args } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    token: { type: 'string' },
    server: { type: 'string', multiple: true },
    scenarios: { type: 'string', default: 'single,batch' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '64' },
    threads: { type: 'string', default: String(availableParallelism()) },
    'hit-ratio': { type: 'string', default: '0.1' },
    json: { type: 'string' },
  },
  strict: true,
});

const servers: NamedCommand[] = (args.server ?? []).map(namedCommand);
if (servers.length < 2) throw new Error('give at least two --server NAME=COMMAND');
if (args['data-dir'] === undefined || args.token === undefined) throw new Error('--data-dir and --token are required');
const scenarios = args.scenarios.split(',').map((s) => s.trim());
for (const s of scenarios) if (s !== 'single' && s !== 'batch') throw new Error(`--scenarios takes single and batch, got ${s}`);
const rounds = wholeNumberOption('rounds', args.rounds);
const seconds = wholeNumberOption('seconds', args.seconds);
const connections = wholeNumberOption('connections', args.connections);
const threads = wholeNumberOption('threads', args.threads);
const hitRatio = Number(args['hit-ratio']);
const token = args.token;
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Running {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** `command` in a session of its own, once it says where it listens. */
async function start(named: NamedCommand): Promise<Running> {
  const child: ChildProcess = spawn('sh', ['-c', `exec ${named.command}`], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      output += c.toString();
      const match = /listening on https?:\/\/[^:\s]+:(\d+)/.exec(output);
      if (match !== null) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`${named.name} exited with ${code}:\n${output}`)));
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  };
  return { name: named.name, port, pid: child.pid!, stop };
}

async function main(): Promise<void> {
  requireWrk();
  useServiceAllocatorSettings();
  const found = await loadNewestValidSnapshot(openDataDir(args['data-dir']!));
  if (found === null) throw new Error(`no snapshot in ${args['data-dir']}`);
  const scratch = await mkdtemp(join(tmpdir(), 'upi-risk-compare-'));
  const running: Running[] = [];
  const report: Record<string, unknown> = {
    date: new Date().toISOString(),
    servers,
    options: { rounds, seconds, connections, threads, hitRatio },
    scenarios: {},
  };
  try {
    const workload = await writeWorkload(new SnapshotView(found.data), scratch, { hitRatio });
    for (const named of servers) running.push(await start(named));
    for (const server of running) log(`${server.name}: listening on ${server.port}, read its evidence in ${await evidenceRead(server.name, server.port)} s`);
    await sleep(2000);
    const wrkOptions = { seconds, connections, threads: 1 };
    for (const scenario of scenarios as ('single' | 'batch')[]) {
      const bare: BareServer = await startBare(bodyBytesOf(scenario, workload), args['data-dir']!, false, threads);
      try {
        const contender = (server: { name: string; port: number; pid: number }) => ({ ...server, target: targetFor(scenario, workload, server.port, false, token) });
        // The servers rotate: each goes first as often as the others.
        const done = await rotatedPeakRounds(running.map(contender), contender({ name: 'ceiling', port: bare.port, pid: bare.pid }), { ...wrkOptions, rounds }, (round, { runs }) =>
          log(
            `${scenario} round ${round}: ` +
              Object.entries(runs)
                .map(([name, r]) => `${name} ${r.requestsPerSecond} req/s (${r.serverCpuUsPerRequest} µs, ${r.errors + r.non2xx} failed)`)
                .join(', '),
          ),
        );
        (report.scenarios as Record<string, unknown>)[scenario] = summarise(done);
      } finally {
        await bare.stop();
      }
    }
  } finally {
    await Promise.allSettled(running.map((s) => s.stop()));
    await rm(scratch, { recursive: true, force: true });
  }
  const text = `${JSON.stringify(report, null, 2)}\n`;
  if (args.json !== undefined) await writeFile(args.json, text);
  process.stdout.write(text);
}

/** Per server: median peak and CPU per request; per pair, the median over rounds of their ratio; each to the ceiling. */
function summarise(done: readonly RotatedRound[]): Record<string, unknown> {
  const names = Object.keys(done[0]!.runs);
  const median = (values: number[]) => medianBy(values, (v) => v);
  const perServer = Object.fromEntries(
    names.map((name) => [
      name,
      {
        requestsPerSecond: median(done.map((r) => r.runs[name]!.requestsPerSecond)),
        cpuUsPerRequest: median(done.map((r) => r.runs[name]!.serverCpuUsPerRequest ?? Number.NaN)),
        toCeiling: round3(median(done.map((r) => r.runs[name]!.requestsPerSecond / r.runs.ceiling!.requestsPerSecond))),
        failed: done.reduce((sum, r) => sum + r.runs[name]!.errors + r.runs[name]!.non2xx, 0),
      },
    ]),
  );
  const pairs: Record<string, unknown> = {};
  for (const a of names) {
    for (const b of names) {
      if (a === b || a === 'ceiling' || b === 'ceiling' || names.indexOf(a) > names.indexOf(b)) continue;
      const ratios = done.map((r) => r.runs[b]!.requestsPerSecond / r.runs[a]!.requestsPerSecond);
      const cpu = done.map((r) => (r.runs[b]!.serverCpuUsPerRequest ?? Number.NaN) / (r.runs[a]!.serverCpuUsPerRequest ?? Number.NaN));
      pairs[`${b} / ${a}`] = {
        peak: round3(median(ratios)),
        peakRange: [round3(Math.min(...ratios)), round3(Math.max(...ratios))],
        cpuPerRequest: round3(median(cpu)),
        cpuRange: [round3(Math.min(...cpu)), round3(Math.max(...cpu))],
      };
    }
  }
  return { perServer, pairs, rounds: done };
}

await main();
