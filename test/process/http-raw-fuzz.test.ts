import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32 } from '../fixtures/random.js';
import { lookupProblem, parseAnswers, rawRequest, startEdgeServer, type EdgeServer } from '../raw-http.js';
import { ERROR_CODES, MAX_BODY_BYTES } from '../../src/api/schemas.js';
import { MAX_ADMIN_BODY_BYTES, MAX_WATCH_BODY_BYTES } from '../../src/api/admin-requests.js';
import { CHUNKED_OVERFLOW_WAIT_MS } from '../../src/http/request-body.js';

/**
 * Bounded fuzzing over raw sockets: a seeded generator of malformed and
 * valid-ish requests (methods, paths, query strings with bad escapes, header
 * values with control and high bytes, bodies, truncations, several reads,
 * pipelining), sent on connections of their own against a server with two
 * serving threads. Holds: no 5xx but the planned endpoints' 503, no
 * connection held past a bound (answered and closed, or closed), every JSON
 * error a spec code, no "request failed" in the log, and the server alive
 * and exact afterwards. Among them, chunked bodies past a route's cap that
 * never end, on connections left open: each is refused 400 and closed
 * within a bound. Deterministic for a seed (UPI_RISK_FUZZ_SEED).
 */
const SEED = Number(process.env.UPI_RISK_FUZZ_SEED ?? 20_261_126);
const CONNECTIONS = 2000;
/** Connections in flight at once. */
const PARALLEL = 24;
/** Most connections half-close after writing, which uWS answers at once; the others wait out its idle timeout (8 to 12 s). */
const LEFT_OPEN_EVERY = 100;
const HALF_CLOSED_WITHIN_MS = 5000;
const LEFT_OPEN_WITHIN_MS = 20_000;
/** Every this many connections, one sends a chunked body past its route's cap and neither ends it nor half-closes. */
const UNENDED_EVERY = 40;
/** Under uWS's idle timeout, which would close such a connection unanswered. */
const UNENDED_WITHIN_MS = CHUNKED_OVERFLOW_WAIT_MS + 4000;
const CODES = new Set<string>(ERROR_CODES);

type Random = () => number;
const pick = <T>(r: Random, items: readonly T[]): T => items[Math.floor(r() * items.length)]!;
const chance = (r: Random, p: number) => r() < p;

const METHODS = ['GET', 'GET', 'GET', 'POST', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'CONNECT', 'FOO', 'PROPFIND', 'get', 'G ET', ''];
const PATHS = [
  '/v1/verify/upi',
  '/v1/verify/upi',
  '/v1/verify/upi/batch',
  '/v1/verify/upi/cluster/MC-1',
  '/v1/verify/upi/cluster/MC-%31',
  '/v1/verify/upi/cluster/',
  '/v1/verify/upi/cluster/MC-99999999999999999999',
  '/v1/cyber/check',
  '/v1/audit/app',
  '/v1/openapi.json',
  '/healthz',
  '/readyz',
  '/metrics',
  '/',
  '*',
  'http://x/healthz',
  '/v1/verify/upi/../healthz',
  '//v1//verify/upi',
  '/%zz',
];
const QUERY_PARTS = ['upi=', 'upi', 'a@ybl', '%40', '%zz', '%', '%4', '%C3%A9', '%ff', '%C0%80', '%ED%A0%80', '&', '=', '+', 'x=1', '%2526', 'upi=b%40ybl', '\xe9', '\x00', ' ', '#'];
const VERSIONS = ['HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.2', 'http/1.1', ''];
const JUNK = ['\x00', '\x01', '\x7f', '\x80', '\xff', '\xe9', '\t', ' ', '\r', '\n', ':', '"', '\\', 'é'];

function junk(r: Random, max: number): string {
  let out = '';
  const n = Math.floor(r() * max);
  for (let i = 0; i < n; i++) out += chance(r, 0.5) ? pick(r, JUNK) : String.fromCharCode(0x20 + Math.floor(r() * 95));
  return out;
}

function vpa(r: Random, flagged: string): string {
  return pick(r, [flagged, 'someone@ybl', 'A.b-c_d@okaxis', 'no-at-sign', '@ybl', 'x@y', `${'h'.repeat(300)}@ybl`, `${junk(r, 6)}@ybl`]);
}

function body(r: Random, flagged: string): string {
  switch (Math.floor(r() * 9)) {
    case 0:
      return JSON.stringify({ upis: Array.from({ length: 1 + Math.floor(r() * 5) }, () => vpa(r, flagged)) });
    case 1:
      return JSON.stringify({ vpas: [vpa(r, flagged)] });
    case 2:
      return JSON.stringify({ upis: Array.from({ length: 101 }, () => 'a@ybl') });
    case 3:
      return JSON.stringify({ upis: [1, null, {}] });
    case 4:
      return '{"upis": [';
    case 5:
      return junk(r, 40);
    case 6:
      return '';
    case 7:
      return JSON.stringify({ upis: [flagged], vpas: [flagged] });
    default:
      return ' '.repeat(Math.floor(r() * 70_000));
  }
}

const MUTATIONS = ['method', 'path', 'query', 'version', 'host', 'authorization', 'content-type', 'framing', 'eol', 'many-headers', 'big-header', 'junk-header', 'body'] as const;
type Mutation = (typeof MUTATIONS)[number];

/** One request's bytes: a well-formed request, half the time with one to three things wrong. */
function request(r: Random, key: string, flagged: string): { bytes: string; head: boolean } {
  const wrong = new Set<Mutation>();
  if (chance(r, 0.5)) for (let n = 1 + Math.floor(r() * 3); n > 0; n--) wrong.add(pick(r, MUTATIONS));
  let method = pick(r, ['GET', 'GET', 'GET', 'POST', 'POST', 'HEAD']);
  if (wrong.has('method')) method = pick(r, METHODS);
  let path = method === 'POST' ? pick(r, ['/v1/verify/upi/batch', '/v1/verify/upi/batch', '/v1/audit/app']) : pick(r, PATHS.slice(0, 14));
  if (wrong.has('path')) path = pick(r, PATHS);
  if (path === '/v1/verify/upi') {
    path += `?upi=${encodeURIComponent(vpa(r, flagged))}`;
    if (wrong.has('query')) {
      path = '/v1/verify/upi?';
      for (let n = 1 + Math.floor(r() * 4); n > 0; n--) path += chance(r, 0.4) ? `upi=${vpa(r, flagged).replace('@', chance(r, 0.5) ? '%40' : '@')}` : pick(r, QUERY_PARTS);
    }
  }
  const version = wrong.has('version') ? pick(r, VERSIONS) : 'HTTP/1.1';
  const lines = [`${method} ${path} ${version}`.trimEnd()];
  if (!wrong.has('host')) lines.push('Host: x');
  lines.push(
    wrong.has('authorization')
      ? `Authorization: ${pick(r, [`bearer   ${key}`, `Bearer ${key}${junk(r, 3)}`, `Bearer ${junk(r, 3)}${key}`, 'Bearer', 'Basic dXNlcg==', junk(r, 20), `Bearer ${key.slice(0, 10)}`])}`
      : `Authorization: Bearer ${key}`,
  );
  let payload = '';
  let framing = 'none';
  if (method === 'POST' || wrong.has('body')) {
    payload = wrong.has('body') ? body(r, flagged) : JSON.stringify({ upis: [vpa(r, flagged), vpa(r, flagged)] });
    lines.push(`Content-Type: ${wrong.has('content-type') ? pick(r, ['text/plain', 'application/json\xe9', `application/${junk(r, 4)}json`, '']) : 'application/json'}`);
    framing = wrong.has('framing') ? pick(r, ['chunked', 'none', 'wrong-length', 'bad-length', 'zero']) : 'length';
    if (framing === 'length') lines.push(`Content-Length: ${Buffer.byteLength(payload, 'latin1')}`);
    else if (framing === 'wrong-length') lines.push(`Content-Length: ${Math.max(0, Buffer.byteLength(payload, 'latin1') + Math.floor(r() * 20) - 10)}`);
    else if (framing === 'bad-length') lines.push(`Content-Length: ${pick(r, ['-1', '5x', '1e3', '', ' ', '99999999999999', '0x10', '5, 5'])}`);
    else if (framing === 'zero') lines.push('Content-Length: 0');
    else if (framing === 'chunked') lines.push(`Transfer-Encoding: ${pick(r, ['chunked', 'chunked', 'gzip, chunked', 'identity'])}`);
  }
  if (wrong.has('junk-header')) lines.push(`${pick(r, ['X-Request-Id', 'Connection', 'Expect', 'X-Junk', 'Accept', junk(r, 5)])}: ${pick(r, ['close', 'keep-alive', '100-continue', junk(r, 10)])}`);
  if (wrong.has('many-headers')) for (let i = 0, n = 40 + Math.floor(r() * 20); i < n; i++) lines.push(`X-Many-${i}: v`);
  if (wrong.has('big-header')) lines.push(`X-Big: ${'b'.repeat(3000 + Math.floor(r() * 3000))}`);
  const eol = wrong.has('eol') ? pick(r, ['\n', '\r', '\n\r']) : '\r\n';
  let bytes = lines.join(eol) + eol + eol;
  if (framing === 'chunked') {
    const cut = Math.floor(r() * (payload.length + 1));
    const parts = [payload.slice(0, cut), payload.slice(cut)].filter((p) => p.length > 0);
    bytes += parts.map((p) => `${Buffer.byteLength(p, 'latin1').toString(16)}${chance(r, 0.2) ? ';ext=1' : ''}\r\n${p}\r\n`).join('') + (chance(r, 0.9) ? '0\r\n\r\n' : '');
  } else if (framing !== 'zero') {
    bytes += payload;
  }
  return { bytes, head: method === 'HEAD' };
}

/** A connection's requests (1 to 4, pipelined), maybe truncated, split into 1 to 3 writes. */
function connection(r: Random, key: string, flagged: string): { chunks: Buffer[]; hasHead: boolean; requests: number } {
  const n = chance(r, 0.6) ? 1 : 2 + Math.floor(r() * 3);
  const requests = Array.from({ length: n }, () => request(r, key, flagged));
  let all = Buffer.from(requests.map((q) => q.bytes).join(''), 'latin1');
  if (chance(r, 0.05)) all = all.subarray(0, Math.floor(r() * all.length));
  const chunks: Buffer[] = [];
  const writes = 1 + Math.floor(r() * 3);
  let at = 0;
  for (let i = 1; i < writes; i++) {
    const next = at + Math.floor(r() * (all.length - at));
    chunks.push(all.subarray(at, next));
    at = next;
  }
  chunks.push(all.subarray(at));
  return { chunks: chunks.filter((c) => c.length > 0), hasHead: requests.some((q) => q.head), requests: n };
}

/** The routes that read a body, by their caps, with the key's screen scope or none needed. */
const BODY_ROUTES = [
  { start: 'POST /v1/verify/upi/batch', cap: MAX_BODY_BYTES, keyed: true },
  { start: 'POST /v1/admin/session', cap: MAX_ADMIN_BODY_BYTES, keyed: false },
  { start: 'PUT /v1/watchlists/wl_000000000001/vpas', cap: MAX_WATCH_BODY_BYTES, keyed: true },
  { start: 'DELETE /v1/watchlists/wl_000000000001/vpas', cap: MAX_WATCH_BODY_BYTES, keyed: true },
] as const;

/**
 * A chunked body up to 1 MiB past a body route's cap, in chunks of any size,
 * without the closing chunk, written in pieces of any size; what the client
 * then does is wait.
 */
function unendedChunked(r: Random, key: string): Buffer[] {
  const route = pick(r, BODY_ROUTES);
  const head = `${route.start} HTTP/1.1\r\nHost: x\r\n${route.keyed ? `Authorization: Bearer ${key}\r\n` : ''}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  const frames: Buffer[] = [Buffer.from(head, 'latin1')];
  const target = route.cap + 1 + Math.floor(r() * 1024 * 1024);
  for (let sent = 0; sent < target; ) {
    const size = 1 + Math.floor(r() * 32 * 1024);
    frames.push(Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, 0x20), Buffer.from('\r\n'));
    sent += size;
  }
  const all = Buffer.concat(frames);
  const writes: Buffer[] = [];
  for (let at = 0; at < all.length; ) {
    const size = 1 + Math.floor(r() * 16_384);
    writes.push(all.subarray(at, at + size));
    at += size;
  }
  return writes;
}

describe('raw-socket fuzzing', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '2'] });
  });
  after(async () => {
    await edge.stop();
  });

  test(`${CONNECTIONS} connections of malformed and valid-ish requests (seed ${SEED})`, { timeout: 120_000 }, async (t) => {
    const r = mulberry32(SEED);
    const plans = Array.from({ length: CONNECTIONS }, (_, i) => ({ ...connection(r, edge.key, edge.flagged), leftOpen: i % LEFT_OPEN_EVERY === LEFT_OPEN_EVERY - 1, unended: false }));
    // From a generator of their own, so that the other connections stay what the seed made them.
    const unendedRandom = mulberry32(SEED + 1);
    for (let i = UNENDED_EVERY - 1; i < plans.length; i += UNENDED_EVERY) {
      plans[i] = { chunks: unendedChunked(unendedRandom, edge.key), hasHead: false, requests: 1, leftOpen: true, unended: true };
    }
    let next = 0;
    let answered = 0;
    const statuses = new Map<number, number>();
    const problems: string[] = [];
    const worker = async () => {
      while (next < plans.length) {
        const index = next++;
        const plan = plans[index]!;
        const bound = plan.unended ? UNENDED_WITHIN_MS : plan.leftOpen ? LEFT_OPEN_WITHIN_MS : HALF_CLOSED_WITHIN_MS;
        const result = await rawRequest(edge.port, plan.chunks, { end: !plan.leftOpen, timeoutMs: bound });
        const raw = result.raw.toString('latin1');
        const sent = Buffer.concat(plan.chunks).toString('latin1').slice(0, 300);
        if (!result.closed) problems.push(`#${index}: connection held past ${bound} ms: ${JSON.stringify(sent)}`);
        for (const match of raw.matchAll(/HTTP\/1\.[01] (5\d\d)[^\r]*\r\n(?:[^\r]+\r\n)*\r\n(\{[^\n]*?\})?/g)) {
          if (match[1] !== '503' || !(match[2] ?? '').includes('"service_unavailable"')) problems.push(`#${index}: ${match[0].slice(0, 200)} for ${JSON.stringify(sent)}`);
        }
        if (!plan.hasHead) {
          const { answers } = parseAnswers(result.raw);
          if (plan.unended && (answers.length !== 1 || answers[0]!.status !== 400)) {
            problems.push(`#${index}: an unended chunked body past the cap answered ${JSON.stringify(answers.map((a) => a.status))} for ${JSON.stringify(sent)}`);
          }
          answered += answers.length;
          for (const answer of answers) {
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
            if (answer.status === 200 || answer.body === '') continue;
            const error = (() => {
              try {
                return (JSON.parse(answer.body) as { error?: unknown }).error;
              } catch {
                return undefined;
              }
            })();
            if (typeof error !== 'string' || !CODES.has(error)) problems.push(`#${index}: ${answer.status} with body ${answer.body.slice(0, 120)}`);
          }
        }
        if (index % 300 === 299) {
          const problem = await lookupProblem(edge.port, edge.key, edge.flagged, 'FLAGGED');
          if (problem !== null) problems.push(`after #${index}: lookup of ${edge.flagged}: ${problem}`);
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    const requests = plans.reduce((sum, plan) => sum + plan.requests, 0);
    t.diagnostic(`${requests} requests on ${CONNECTIONS} connections; answers by status (without HEAD connections): ${JSON.stringify([...statuses].sort())}`);
    assert.deepEqual(problems.slice(0, 20), []);
    // The generator must reach the service, not only the parser; each 4xx of the spec must come up.
    assert.ok(answered > CONNECTIONS / 3, `only ${answered} answers`);
    for (const status of [200, 400, 401, 404, 422]) assert.ok((statuses.get(status) ?? 0) > 0, `no ${status} answered`);
    assert.equal(edge.server.child.exitCode, null, 'the server exited');
    assert.equal(await lookupProblem(edge.port, edge.key, edge.flagged, 'FLAGGED'), null);
    assert.equal(await lookupProblem(edge.port, edge.key, 'never.seen.payee@ybl', 'CLEARED'), null);
    assert.equal(edge.server.stderr().includes('request failed'), false, edge.server.stderr().slice(-2000));
  });
});
