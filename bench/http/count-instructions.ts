/**
 * Instructions per request, counted by valgrind's callgrind: the same
 * requests give nearly the same counts whatever else the host is doing
 * (within 2 % from run to run), where the CPU time per request that
 * compare-servers.ts reads moves by 10-30 % from one round to the next on
 * a shared machine. It counts user space only (the
 * kernel's TCP, two thirds of a single lookup's CPU, is the same for every
 * server), so it says what a change saves in the server's own work, not
 * the whole of its CPU.
 *
 *   node dist/bench/http/count-instructions.js --data-dir DIR --token KEY \
 *     --server 'old=node /work/wt-old/dist/src/cli/main.js serve --data-dir DIR2 --plain-http --port 0 --threads 1' \
 *     --server 'new=node dist/src/cli/main.js serve --data-dir DIR3 --plain-http --port 0 --threads 1' \
 *     [--scenario single|batch] [--warm 20000] [--requests 5000] [--hit-ratio 0.1] [--json FILE]
 *
 * Each server runs under callgrind, and the bare server (bare-server.ts,
 * one thread) as the ceiling. Requests go one after another on one
 * connection, from the workload compare-servers.ts sends, once a service
 * has read its stored evidence: `--warm` of them until the compiler has
 * settled, then the counters are zeroed and `--requests` are counted.
 * Every thread is counted apart; the busiest is the one that serves.
 * Valgrind runs a server some fifty times slower, so use a small data set
 * (100,000 VPAs start in a minute).
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dataDir as openDataDir } from '../../src/common/data-dir.js';
import { loadNewestValidSnapshot } from '../../src/engine/snapshot-files.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { round3, wholeNumberOption } from '../support/report.js';
import { BARE_SERVER, bodyBytesOf, evidenceRead, namedCommand } from './scenarios.js';
import { writeWorkload } from './workload.js';

const { values: args } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    token: { type: 'string' },
    server: { type: 'string', multiple: true },
    scenario: { type: 'string', default: 'single' },
    warm: { type: 'string', default: '20000' },
    requests: { type: 'string', default: '5000' },
    'hit-ratio': { type: 'string', default: '0.1' },
    json: { type: 'string' },
  },
  strict: true,
});

if (args['data-dir'] === undefined || args.token === undefined) throw new Error('--data-dir and --token are required');
if (args.scenario !== 'single' && args.scenario !== 'batch') throw new Error(`--scenario takes single or batch, got ${args.scenario}`);
const scenario: 'single' | 'batch' = args.scenario;
const warm = wholeNumberOption('warm', args.warm);
const requests = wholeNumberOption('requests', args.requests);
const token = args.token;
const servers = (args.server ?? []).map((text) => {
  const server = namedCommand(text);
  // Names become callgrind's file names, read back by pattern.
  if (!/^[A-Za-z0-9_-]+$/.test(server.name) || server.name === 'ceiling') throw new Error(`a --server name is letters, digits, "_" and "-", and not "ceiling": got ${server.name}`);
  return server;
});
if (servers.length === 0) throw new Error('give at least one --server NAME=COMMAND');
const log = (line: string) => process.stderr.write(`${line}\n`);

/** One server's count: instructions per request of each thread that ran any, busiest first. */
interface Count {
  readonly name: string;
  readonly threads: readonly { readonly thread: number; readonly perRequest: number }[];
  readonly busiest: number;
  readonly all: number;
}

/** The requests of the scenario as bytes on the wire, from the workload's lines. */
function wireRequests(lines: readonly string[]): Buffer[] {
  const auth = `Authorization: Bearer ${token}\r\n`;
  return lines.map((line) =>
    Buffer.from(
      scenario === 'single'
        ? `GET ${line} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`
        : `POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(line)}\r\n\r\n${line}`,
    ),
  );
}

/** Send `count` requests one after another on one connection, each once the answer before it is in; any answer but 200 fails. */
async function send(port: number, wire: readonly Buffer[], count: number): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let sent = 0;
  let answered = 0;
  let pending = Buffer.alloc(0);
  const done = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`the connection closed after ${answered} of ${count} answers`)));
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const headEnd = pending.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const head = pending.toString('latin1', 0, headEnd);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? NaN);
        if (!Number.isFinite(length)) return reject(new Error(`an answer without Content-Length: ${head}`));
        if (pending.length < headEnd + 4 + length) return;
        if (!head.startsWith('HTTP/1.1 200')) return reject(new Error(`answered ${head.split('\r\n')[0]}: ${pending.toString('utf8', headEnd + 4, headEnd + 4 + length)}`));
        pending = pending.subarray(headEnd + 4 + length);
        if (++answered === count) {
          socket.removeAllListeners('close');
          socket.end();
          return resolve();
        }
        socket.write(wire[sent++ % wire.length]!);
      }
    });
  });
  socket.write(wire[sent++ % wire.length]!);
  await done;
}

/** Run `command` under callgrind, send the warm-up and the counted requests, and read the counts callgrind dumped. */
async function count(name: string, command: string, service: boolean, wire: readonly Buffer[], scratch: string): Promise<Count> {
  const prefix = join(scratch, name);
  const child = spawn('sh', ['-c', `exec valgrind --tool=callgrind --smc-check=all-non-file --separate-threads=yes --callgrind-out-file=${prefix}.%p ${command}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (?:on https?:\/\/[^:\s]+:)?(\d+)/.exec(output);
      if (match !== null) resolve(Number(match[1]));
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}:\n${output.slice(-2000)}`)));
  });
  const pid = child.pid!;
  try {
    // A service reads its stored evidence ahead after it listens: counted, that work would be the threads' beside the serving one.
    if (service) log(`${name}: listening on ${port} under callgrind, read its evidence in ${await evidenceRead(name, port, 3_600_000)} s`);
    log(`${name}: ${warm} requests to warm`);
    await send(port, wire, warm);
    execFileSync('callgrind_control', ['--zero', String(pid)], { stdio: 'ignore' });
    await send(port, wire, requests);
    execFileSync('callgrind_control', ['--dump', String(pid)], { stdio: 'ignore' });
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
  }
  // The dump's files are <prefix>.<pid>.1-<thread>; those written at exit have no dump number.
  const dumped = new RegExp(`^${name}\\.${pid}\\.1-(\\d+)$`);
  const threads: { thread: number; perRequest: number }[] = [];
  for (const file of await readdir(scratch)) {
    const match = dumped.exec(file);
    if (match === null) continue;
    const summary = /^summary: (\d+)$/m.exec(await readFile(join(scratch, file), 'utf8'));
    if (summary === null) throw new Error(`no summary line in ${file}`);
    const instructions = Number(summary[1]);
    if (instructions > 0) threads.push({ thread: Number(match[1]), perRequest: Math.round(instructions / requests) });
  }
  if (threads.length === 0) throw new Error(`callgrind dumped nothing for ${name}`);
  threads.sort((a, b) => b.perRequest - a.perRequest);
  return { name, threads, busiest: threads[0]!.perRequest, all: threads.reduce((sum, t) => sum + t.perRequest, 0) };
}

async function main(): Promise<void> {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  const found = await loadNewestValidSnapshot(openDataDir(args['data-dir']!));
  if (found === null) throw new Error(`no snapshot in ${args['data-dir']}`);
  const scratch = await mkdtemp(join(tmpdir(), 'upi-risk-instructions-'));
  try {
    const workload = await writeWorkload(new SnapshotView(found.data), scratch, { hitRatio: Number(args['hit-ratio']) });
    const lines = (await readFile(scenario === 'single' ? workload.singleFile : workload.batchFile, 'utf8')).split('\n').filter((line) => line !== '');
    const wire = wireRequests(lines);
    const ceiling = `${process.execPath} ${BARE_SERVER} --body-bytes ${bodyBytesOf(scenario, workload)} --threads 1`;
    const counts: Count[] = [];
    for (const { name, command } of [...servers, { name: 'ceiling', command: ceiling }]) {
      const counted = await count(name, command, name !== 'ceiling', wire, scratch);
      counts.push(counted);
      log(`${name}: ${counted.busiest} instructions a request on its busiest thread, ${counted.all} on all (${counted.threads.length} threads)`);
    }
    const bare = counts.at(-1)!;
    const report = {
      date: new Date().toISOString(),
      options: { scenario, warm, requests, hitRatio: Number(args['hit-ratio']) },
      servers: counts.map((c) => ({ ...c, busiestToCeiling: round3(c.busiest / bare.busiest) })),
    };
    const text = JSON.stringify(report, null, 2);
    if (args.json !== undefined) await writeFile(args.json, `${text}\n`);
    process.stdout.write(`${text}\n`);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
