/**
 * The console's browser tests drive Debian's Chromium (playwright-core
 * downloads no browser). Run by `npm test` before the tests: when
 * /usr/bin/chromium is missing it is installed with apt-get if this process
 * is root, and otherwise the command to run is printed and the exit status is 1.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CHROMIUM = '/usr/bin/chromium';
const INSTALL = 'apt-get update && apt-get install -y chromium';

if (!existsSync(CHROMIUM)) {
  if (process.getuid?.() === 0) {
    process.stdout.write(`${CHROMIUM} is missing; installing it for the console's browser tests: ${INSTALL}\n`);
    const result = spawnSync('sh', ['-c', INSTALL], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (result.status !== 0 || !existsSync(CHROMIUM)) {
      process.stderr.write(`installing chromium failed (exit ${result.status ?? result.signal}); the browser tests need ${CHROMIUM}\n`);
      process.exit(1);
    }
  } else {
    process.stderr.write(`The console's browser tests need ${CHROMIUM}. Install it as root:\n  sudo sh -c '${INSTALL}'\n`);
    process.exit(1);
  }
}
