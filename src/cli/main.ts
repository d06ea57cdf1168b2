#!/usr/bin/env node
import { ConfigError, UpiRiskError } from '../common/errors.js';
import type { Command } from './command.js';
import { ingestCommand } from './commands/ingest.js';
import { buildCommand } from './commands/build.js';
import { demoDataCommand } from './commands/demo-data.js';
import { serveCommand } from './commands/serve.js';
import { keysCommand } from './commands/keys.js';
import { migrateCommand } from './commands/migrate.js';
import { builderCommand } from './commands/builder.js';
import { retractCommand } from './commands/retract.js';
import { mirrorKeyCommand } from './commands/mirror-key.js';

const COMMANDS: readonly Command[] = [serveCommand, ingestCommand, retractCommand, buildCommand, keysCommand, mirrorKeyCommand, migrateCommand, builderCommand, demoDataCommand];

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'upi-risk: UPI payee risk screening service and operator tools',
    '',
    'Usage: upi-risk <command> [options]   (upi-risk <command> --help for details)',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
  ].join('\n');
}

export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${overview()}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) {
    process.stderr.write(`upi-risk: unknown command ${JSON.stringify(name)}\n\n${overview()}\n`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof UpiRiskError) {
      process.stderr.write(`upi-risk ${command.name}: ${error.message} [${error.code}]\n`);
      return error instanceof ConfigError ? 2 : 1;
    }
    throw error;
  }
}

// Exit explicitly: a command is done when it returns, whatever handles (a Redis
// client, a pool thread winding down) are still open. Standard streams are
// synchronous for files and pipes on Linux, so nothing written is lost.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`upi-risk: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
