import { dataDir } from '../../common/data-dir.js';
import { MAX_BUILD_THREADS } from '../../builder/snapshot-builder.js';
import { BuilderRole, DEFAULT_PUBLISH_POLICY } from '../../roles/builder-role.js';
import { DEFAULT_MIRROR_INTERVAL_MS } from '../../service/mirror-keeper.js';
import { evidenceMaxAge, intOption, parseCommandArgs, type Command } from '../command.js';
import { commandLogger } from '../cli-logger.js';
import { STORE_OPTIONS, STORE_USAGE, requireStore } from '../store-options.js';

const usage = `Usage: upi-risk builder --store URL [options]

The fleet's builder (docs/deployment.md): builds snapshots from the store's
evidence log and publishes them in the store, where every follower
(\`upi-risk serve --store\`) picks them up; between publications, followers
serve the log after the newest one as their live delta. Run two or more:
one is active (it holds a PostgreSQL advisory lock), the others stand by
and take over within seconds when it dies. Runs until SIGTERM or SIGINT;
SIGUSR2 makes the active builder publish at once.

When its data directory holds a mirror signing key (upi-risk mirror-key
create --data-dir DIR; give every builder a copy of the same key file),
the active builder also makes the local mirror's versions (docs/api.md,
The mirror) from what followers serve, and records them in the store,
where every follower serves them.

Options:
${STORE_USAGE}
  --data-dir DIR          working directory: the log mirrored as evidence
                          files, the builds' snapshots and state (default:
                          var/builder); it can be lost, it is made again
  --publish-items N       publish once the log holds N items past the newest
                          publication (default: ${DEFAULT_PUBLISH_POLICY.items})
  --publish-minutes M     or once the newest publication is M minutes old and
                          the log has moved past it (default: ${DEFAULT_PUBLISH_POLICY.afterMs / 60_000})
  --threads N             build threads (default: every core)
  --poll-ms MS            how often a standby tries for the lease and the
                          active builder looks at the log (default: 2000)
  --evidence-max-age-days N
                          evidence captured more than N days before a
                          build's scoring time stops counting (1 to 36500;
                          default: evidence counts for ever); once evidence
                          of the newest publication has expired, the next
                          follows within --publish-minutes
  --mirror-seconds S      the least time between two mirror versions
                          (default: ${DEFAULT_MIRROR_INTERVAL_MS / 1000})`;

export const builderCommand: Command = {
  name: 'builder',
  summary: 'build and publish snapshots from the fleet store (fleet mode)',
  usage,
  async run(argv) {
    const { values } = parseCommandArgs(argv, {
      ...STORE_OPTIONS,
      'data-dir': { type: 'string' },
      'publish-items': { type: 'string' },
      'publish-minutes': { type: 'string' },
      threads: { type: 'string' },
      'poll-ms': { type: 'string' },
      'evidence-max-age-days': { type: 'string' },
      'mirror-seconds': { type: 'string' },
    });
    const location = requireStore(values, 'builder');
    const logger = commandLogger('builder');
    const role = await BuilderRole.start({
      location,
      dataDir: dataDir(values['data-dir'] ?? 'var/builder'),
      logger,
      policy: {
        items: intOption('publish-items', values['publish-items'], DEFAULT_PUBLISH_POLICY.items, 1, 1_000_000_000),
        afterMs: intOption('publish-minutes', values['publish-minutes'], DEFAULT_PUBLISH_POLICY.afterMs / 60_000, 1, 7 * 24 * 60) * 60_000,
      },
      pollMs: intOption('poll-ms', values['poll-ms'], 2000, 50, 60_000),
      evidenceMaxAgeMs: evidenceMaxAge(values['evidence-max-age-days']),
      mirrorIntervalMs: intOption('mirror-seconds', values['mirror-seconds'], DEFAULT_MIRROR_INTERVAL_MS / 1000, 1, 86_400) * 1000,
      ...(values.threads === undefined ? {} : { buildThreads: intOption('threads', values.threads, 1, 1, MAX_BUILD_THREADS) }),
    });
    process.stdout.write(`upi-risk builder following ${location.schema}\n`);
    process.on('SIGUSR2', () => {
      logger.info({ signal: 'SIGUSR2' }, 'publication requested');
      role.requestBuild();
    });
    // The role's timers do not hold the process, and a standby has no connection open between its tries for the
    // lease: without this, it exited (status 0) once its pool's idle connections closed, 30 s after it started.
    const held = setInterval(() => {}, 2 ** 30);
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    clearInterval(held);
    logger.info({ signal }, 'stopping: the lease is let go once the pass running ends');
    await role.close();
    return 0;
  },
};
