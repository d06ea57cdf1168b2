import { migrate } from '../../store/migrations.js';
import { redactStoreUrl } from '../../store/postgres.js';
import { parseCommandArgs, type Command } from '../command.js';
import { STORE_OPTIONS, STORE_USAGE, requireStore } from '../store-options.js';

const usage = `Usage: upi-risk migrate --store URL [--store-schema NAME]

Create the fleet's schema in PostgreSQL, or bring it up to this release:
apply, in order and each in a transaction of its own, the numbered
migrations it lacks. Safe to run again and from several processes at
once. Run it before starting a new release's builders and servers: every
role refuses a schema behind or ahead of the release it runs.

Options:
${STORE_USAGE}`;

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'create or upgrade the fleet store schema in PostgreSQL',
  usage,
  async run(argv) {
    const { values } = parseCommandArgs(argv, STORE_OPTIONS);
    const location = requireStore(values, 'migrate');
    const report = await migrate(location);
    const done = report.applied.length === 0 ? 'already up to date' : `applied migration(s) ${report.applied.join(', ')}`;
    process.stdout.write(`migrate: schema ${location.schema} in ${redactStoreUrl(location.url)} at version ${report.version}: ${done}\n`);
    return 0;
  },
};
