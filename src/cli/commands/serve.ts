import { DEFAULT_MIRROR_INTERVAL_MS } from '../../service/mirror-keeper.js';
import { DEFAULT_HISTORY_DAYS } from '../../history/served-versions.js';
import { isPublicKeyText } from '../../mirror/signing-key.js';
import { availableParallelism } from 'node:os';
import { dataDir } from '../../common/data-dir.js';
import { cgroupMemoryLimit, parseMemorySize } from '../../common/memory-limit.js';
import { ConfigError } from '../../common/errors.js';
import { DEFAULT_PLANS_FILE } from '../../access/plans.js';
import { DEFAULT_BUILD_IDLE_MS, DEFAULT_COMPACTION, MAX_BUILD_IDLE_SECONDS } from '../../service/snapshot-service.js';
import { MAX_BUILD_THREADS } from '../../builder/snapshot-builder.js';
import { DEFAULT_DELIVERY } from '../../watch/webhook-delivery.js';
import { serveEmbedded } from '../../roles/embedded-role.js';
import { serveFollower } from '../../roles/follower-role.js';
import { LOG_LEVELS, type LogLevel, type ServeOptions } from '../../roles/serving-process.js';
import { evidenceMaxAge, intOption, parseCommandArgs, type Command } from '../command.js';
import { REDIS_OPTIONS } from '../key-backend-options.js';
import { STORE_OPTIONS, STORE_USAGE, chooseStore } from '../store-options.js';

const usage = `Usage: upi-risk serve [options]

Serve the v1 API over HTTPS (TLS 1.3 only) from the newest valid snapshot in
DIR, building one first if there is none, or none as new as the one last
served. New evidence ingested into DIR is
served within a second from a live delta beside the snapshot; the delta is
folded into a new snapshot in the background (a compaction) when it grows
past --compact-vpas or --compact-minutes, on SIGUSR2, or when
\`upi-risk build\` writes one. API keys created, rotated or revoked with
\`upi-risk keys\` take effect within a second. One serve holds DIR while it
runs (DIR/state/serve.lock): another serve of DIR, on any port, exits at
once with status 1; \`ingest\`, \`retract\`, \`build\` and \`keys\` work beside it.

Options:
  --data-dir DIR        data directory (default: $UPI_RISK_DATA_DIR or var/data)
  --host HOST           address to listen on (default: 127.0.0.1)
  --port PORT           port (default: 8443 with TLS, 8080 with --plain-http; 0 picks a free one)
  --tls-cert FILE       PEM certificate (chain) for TLS
  --tls-key FILE        PEM private key for TLS
                        without both, a self-signed certificate for localhost
                        is generated once into DIR/tls/
  --plain-http          serve plain HTTP instead (behind a TLS-terminating
                        load balancer, or for benchmarks); prints a warning
  --plans FILE          rate-limit plans (default: config/plans.json)
  --redis URL           share quotas and keep API keys in Redis, for several
                        replicas (default: $REDIS_URL; without it everything
                        stays in this process and the key file)
  --redis-prefix P      prefix of every Redis key (default: upi-risk)
  --metrics-token TOKEN bearer token for GET /metrics (default: $UPI_RISK_METRICS_TOKEN;
                        without one, /metrics answers loopback clients only)
  --poll-ms MS          how often to look for new evidence and snapshots (default: 1000)
  --threads N           serving threads on the shared port (default: every core);
                        all read one shared copy of the index, quotas stay per key
  --build-threads N     threads for background builds (default: every core but
                        one, at least one: a core stays with the serving threads)
  --compact-vpas N      compact once the live delta holds more than N VPAs
                        (default: 100000; 0 compacts after every ingest)
  --compact-minutes M   compact once the oldest evidence in the live delta
                        is M minutes old (default: 10)
  --evidence-max-age-days N
                        evidence captured more than N days before a build's
                        scoring time stops counting (1 to 36500; default:
                        evidence counts for ever); a VPA whose evidence has
                        all expired is CLEARED after the next compaction,
                        which then runs at least every --compact-minutes
  --full-rebuilds       no live delta: rebuild the snapshot from every
                        evidence file on every ingest, instead of keeping
                        the evidence ids in memory and the deduplicated
                        records in state/carry (upi_risk_build_carried_bytes,
                        upi_risk_build_carried_disk_bytes) so that an
                        ingest reads only the new file
  --max-memory SIZE     memory this process may use, such as 4G or 1500M
                        (default: the limit of its control group, as in a
                        container with a memory limit; none: no limit);
                        a compaction that would come near it runs lean,
                        reading every evidence file again instead of
                        keeping the carried build state beside it
  --build-idle-seconds S
                        how long the build threads, with the working memory
                        they keep and the memory of the snapshot last
                        replaced, wait for the next build (default: 20;
                        threads live at least a second after a build);
                        0 holds no replaced snapshot and lets the threads go
                        a second after each build, where memory is tighter
                        than rebuild time (with --full-rebuilds as well,
                        nothing is kept for the next build)
  --webhook-allow HOSTS hosts (comma-separated) webhooks may reach although they
                        are private or loopback; plain http is allowed to them
                        (docs/watchlists.md, Safe targets)
  --webhook-first-retry-seconds S
                        wait before a failed webhook is sent again; each
                        retry doubles it, up to 15 minutes (default: 10)
  --history-days N      how long the record of the data versions served and
                        the history of answers are kept, for
                        GET /v1/data-versions/{version}, GET
                        /v1/verify/upi/history and lookups with as_of
                        (0 to 36500; default: 400; 0: not recorded)
  --read-history-only   with --store: answer from the fleet's history of
                        answers, but never record it (another follower
                        does: docs/operations.md, The history of answers)
  --mirror-seconds S    the least time between two versions of the local mirror
                        (docs/api.md, The mirror), made when what is served
                        changes and DIR/mirror holds a signing key (upi-risk
                        mirror-key create) (default: 60)
  --mirror-public-key KEY
                        with --store: the public key the builder's mirror-key
                        create printed; a mirror version recorded in the
                        store under any other key is not served
  --log-level LEVEL     fatal, error, warn, info, debug or trace (default: info)

Fleet mode (docs/deployment.md): with a store, serve is a follower. It
never builds: it serves the newest snapshot a builder published, with every
evidence item logged after it as its live delta, and follows new evidence
and new snapshots; keys live in the store, and --redis only shares quotas.
It listens once it serves the newest snapshot and the log after it. The
build and compaction options above do not apply; DIR keeps the downloaded
snapshot, and a follower does not hold it (give each follower its own).
${STORE_USAGE}

Operations endpoints (no key, outside the quotas): GET /healthz, GET /readyz,
GET /metrics (Prometheus). Stops on SIGTERM or SIGINT after answering the
requests in flight; compacts on SIGUSR2. A serving thread that fails is replaced by a new one;
after 10 replacements per serving thread within a minute, the next failure
stops serve with exit status 1.`;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'serve the v1 API',
  usage,
  async run(argv) {
    const { values } = parseCommandArgs(argv, {
      'data-dir': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'plain-http': { type: 'boolean' },
      plans: { type: 'string' },
      'metrics-token': { type: 'string' },
      'poll-ms': { type: 'string' },
      'build-threads': { type: 'string' },
      'full-rebuilds': { type: 'boolean' },
      'compact-vpas': { type: 'string' },
      'compact-minutes': { type: 'string' },
      'build-idle-seconds': { type: 'string' },
      'evidence-max-age-days': { type: 'string' },
      'max-memory': { type: 'string' },
      threads: { type: 'string' },
      'log-level': { type: 'string' },
      'webhook-allow': { type: 'string' },
      'webhook-first-retry-seconds': { type: 'string' },
      'mirror-seconds': { type: 'string' },
      'history-days': { type: 'string' },
      'mirror-public-key': { type: 'string' },
      'read-history-only': { type: 'boolean' },
      ...REDIS_OPTIONS,
      ...STORE_OPTIONS,
    });
    const location = chooseStore(values);
    if (location !== null) {
      for (const option of EMBEDDED_ONLY) {
        if (values[option] !== undefined) throw new ConfigError(`--${option} is for the embedded mode: a follower (--store) never builds`);
      }
    }
    const mirrorPublicKey = values['mirror-public-key'];
    const readHistoryOnly = values['read-history-only'] === true;
    if (readHistoryOnly && location === null) throw new ConfigError('--read-history-only is for a follower (--store): the embedded server records its own history of answers');
    if (mirrorPublicKey !== undefined) {
      if (location === null) throw new ConfigError('--mirror-public-key is for a follower (--store): the embedded server signs with the key in its data directory');
      if (!isPublicKeyText(mirrorPublicKey)) throw new ConfigError('--mirror-public-key must be a public key as mirror-key create prints it: the base64 of 32 bytes');
    }
    const dir = dataDir(values['data-dir']);
    const plain = values['plain-http'] === true;
    const port = intOption('port', values.port, plain ? 8080 : 8443, 0, 65535);
    const pollMs = intOption('poll-ms', values['poll-ms'], 1000, 50, 3_600_000);
    const buildThreads = values['build-threads'] === undefined ? undefined : intOption('build-threads', values['build-threads'], 1, 1, MAX_BUILD_THREADS);
    const threads = intOption('threads', values.threads, availableParallelism(), 1, 256);
    const buildIdleSeconds = intOption('build-idle-seconds', values['build-idle-seconds'], DEFAULT_BUILD_IDLE_MS / 1000, 0, MAX_BUILD_IDLE_SECONDS);
    const compaction = {
      vpas: intOption('compact-vpas', values['compact-vpas'], DEFAULT_COMPACTION.vpas, 0, 100_000_000),
      afterMs: intOption('compact-minutes', values['compact-minutes'], DEFAULT_COMPACTION.afterMs / 60_000, 1, 7 * 24 * 60) * 60_000,
    };
    const evidenceMaxAgeMs = evidenceMaxAge(values['evidence-max-age-days']);
    const memoryLimit = memoryLimitOf(values['max-memory']);
    const webhookAllow = new Set((values['webhook-allow'] ?? '').split(',').map((h) => h.trim().toLowerCase().replace(/^\[|\]$/g, '')).filter((h) => h !== ''));
    const firstRetrySeconds = intOption('webhook-first-retry-seconds', values['webhook-first-retry-seconds'], DEFAULT_DELIVERY.firstRetryMs / 1000, 1, 3600);
    const mirrorSeconds = intOption('mirror-seconds', values['mirror-seconds'], DEFAULT_MIRROR_INTERVAL_MS / 1000, 1, 86_400);
    const historyDays = intOption('history-days', values['history-days'], DEFAULT_HISTORY_DAYS, 0, 36_500);
    const level = values['log-level'] ?? 'info';
    if (!isLogLevel(level)) throw new ConfigError(`--log-level must be fatal, error, warn, info, debug or trace`);
    if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) throw new ConfigError('--tls-cert and --tls-key go together');
    if (plain && values['tls-cert'] !== undefined) throw new ConfigError('--plain-http and --tls-cert exclude each other');
    const options: ServeOptions = {
      dir,
      host: values.host ?? '127.0.0.1',
      port,
      tls: plain ? 'plain-http' : values['tls-cert'] === undefined ? 'self-signed' : { certFile: values['tls-cert'], keyFile: values['tls-key']! },
      plansFile: values.plans ?? DEFAULT_PLANS_FILE,
      metricsToken: values['metrics-token'] ?? process.env.UPI_RISK_METRICS_TOKEN,
      pollMs,
      threads,
      logLevel: level,
      redisUrl: values.redis,
      redisPrefix: values['redis-prefix'],
      webhookAllow,
      webhookFirstRetryMs: firstRetrySeconds * 1000,
      mirrorIntervalMs: mirrorSeconds * 1000,
      historyDays,
    };
    if (location !== null) return serveFollower({ ...options, location, recordsHistory: !readHistoryOnly, ...(mirrorPublicKey === undefined ? {} : { mirrorPublicKey }) });
    return serveEmbedded({
      ...options,
      ...(memoryLimit === null ? {} : { memoryLimitFrom: memoryLimit.from }),
      build: {
        ...(memoryLimit === null ? {} : { memoryLimitBytes: memoryLimit.bytes }),
        incrementalBuilds: values['full-rebuilds'] !== true,
        buildIdleMs: buildIdleSeconds * 1000,
        compaction,
        evidenceMaxAgeMs,
        ...(buildThreads === undefined ? {} : { buildThreads }),
      },
    });
  },
};

/** Options serve takes only without a store: a follower builds nothing. */
const EMBEDDED_ONLY = ['build-threads', 'full-rebuilds', 'compact-vpas', 'compact-minutes', 'build-idle-seconds', 'evidence-max-age-days', 'max-memory'] as const;

/** --max-memory: a size, `none`, or by default the control group's limit when there is one. */
function memoryLimitOf(text: string | undefined): { readonly bytes: number; readonly from: 'max-memory' | 'cgroup' } | null {
  if (text === 'none') return null;
  if (text !== undefined) return { bytes: parseMemorySize('max-memory', text), from: 'max-memory' };
  const bytes = cgroupMemoryLimit();
  return bytes === null ? null : { bytes, from: 'cgroup' };
}

function isLogLevel(level: string): level is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(level);
}
