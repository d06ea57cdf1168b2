import { readFileSync } from 'node:fs';
import { dataDir } from '../../common/data-dir.js';
import { stderrLogger } from '../../common/logger.js';
import { KeyRegistry, keyFilePath } from '../../access/key-store.js';
import { IntelligenceService } from '../../service/intelligence-service.js';
import { createApiApp } from '../../http/app.js';
import { listen } from '../../http/server.js';
import { intOption, parseCommandArgs, type Command } from '../command.js';

const usage = `Usage: upi-risk serve [--data-dir DIR] [--host HOST] [--port PORT] [--poll-ms MS] [--build-threads N]

Serve the v1 API over HTTP from the newest valid snapshot in DIR (building
one first if there is none). New evidence ingested into DIR is picked up,
built in the background and swapped in without a restart; API keys created,
rotated or revoked with \`upi-risk keys\` take effect within a second.

Options:
  --data-dir DIR       data directory (default: $UPI_RISK_DATA_DIR or var/data)
  --host HOST          address to listen on (default: 127.0.0.1)
  --port PORT          port (default: 8080; 0 picks a free one)
  --poll-ms MS         how often to look for new evidence and snapshots (default: 1000)
  --build-threads N    threads for background builds (default: every core)

Stops on SIGTERM or SIGINT.`;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'serve the v1 API',
  usage,
  async run(argv) {
    const { values } = parseCommandArgs(argv, {
      'data-dir': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'poll-ms': { type: 'string' },
      'build-threads': { type: 'string' },
    });
    const dir = dataDir(values['data-dir']);
    const host = values.host ?? '127.0.0.1';
    const port = intOption('port', values.port, 8080, 0, 65535);
    const pollMs = intOption('poll-ms', values['poll-ms'], 1000, 50, 3_600_000);
    const buildThreads = values['build-threads'] === undefined ? undefined : intOption('build-threads', values['build-threads'], 1, 1, 256);
    const logger = stderrLogger;

    const keys = new KeyRegistry(keyFilePath(dir), (error) => logger.error({ err: error.message }, 'key file not reloaded; previous keys stay in force'));
    await keys.load();
    keys.watch();
    const service = await IntelligenceService.start({
      dataDir: dir,
      logger,
      pollMs,
      ...(buildThreads === undefined ? {} : { buildThreads }),
    });
    const app = createApiApp({ intelligence: service, keys, logger, version: packageVersion() });
    const listening = await listen(app, host, port);
    logger.info({ host, port: listening.port, keys: keys.size, snapshot: service.current.meta.id }, 'listening');
    process.stdout.write(`upi-risk listening on http://${host}:${listening.port}\n`);

    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        logger.info({ signal }, 'shutting down');
        listening.close();
        keys.close();
        resolve();
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    await service.close();
    return 0;
  },
};

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
