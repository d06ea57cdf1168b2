import { dataDir } from '../../common/data-dir.js';
import { ConfigError } from '../../common/errors.js';
import { createMirrorKey, loadMirrorKey, mirrorKeyPath } from '../../mirror/signing-key.js';
import { parseCommandArgs, type Command } from '../command.js';

const usage = `Usage: upi-risk mirror-key <create|show> [--data-dir DIR] [--replace]

The Ed25519 key that signs the local mirror's manifests (GET
/v1/mirror/manifest). A server serves the mirror only when its data
directory holds one; in a fleet, the builders' data directories hold it
(\`upi-risk builder --data-dir DIR\`; the same key file in each) and
followers serve what the active builder signed. Callers check every
manifest against its public key.

  create      make a key in DIR/mirror/signing-key.pem (readable by its owner
              alone) and print its public key: the base64 of its 32 bytes,
              what UpiRiskMirror takes as publicKey. Refused when DIR holds
              one already, unless --replace: callers holding the old public
              key then refuse every manifest until given the new one.
  show        print the public key of DIR's key

Options:
  --data-dir DIR   data directory (default: $UPI_RISK_DATA_DIR or var/data)
  --replace        with create: replace the key DIR holds

A server running on DIR reads the key when it starts.

Exit status: 0 done, 2 for a usage error or when show finds no key, 1 when
create finds a key already, or the key cannot be read or written.`;

export const mirrorKeyCommand: Command = {
  name: 'mirror-key',
  summary: "make or show the key that signs the mirror's manifests",
  usage,
  async run(argv) {
    const [action, ...rest] = argv;
    const { values } = parseCommandArgs(rest, { 'data-dir': { type: 'string' }, replace: { type: 'boolean' } });
    const dir = dataDir(values['data-dir']);
    if (action === 'create') {
      const key = await createMirrorKey(dir.mirror, values.replace === true);
      process.stdout.write(`created the mirror signing key ${mirrorKeyPath(dir.mirror)}; its public key:\n${key.publicKey}\n`);
      return 0;
    }
    if (values.replace === true) throw new ConfigError('--replace goes with create');
    if (action === 'show') {
      const key = await loadMirrorKey(dir.mirror);
      if (key === null) throw new ConfigError(`${mirrorKeyPath(dir.mirror)} does not exist: upi-risk mirror-key create makes it`);
      process.stdout.write(`${key.publicKey}\n`);
      return 0;
    }
    throw new ConfigError(`unknown action ${JSON.stringify(action ?? '')}: create or show (upi-risk mirror-key --help)`);
  },
};
