import { dataDir } from '../../common/data-dir.js';
import { ConfigError, ErrorCode, UnavailableError } from '../../common/errors.js';
import { redact } from '../../common/redis.js';
import { KeyAdmin, MAX_KEY_NAME_LENGTH, PLAN_NAME_PATTERN } from '../../access/key-admin.js';
import { DEFAULT_SCOPES, MAX_KEY_LIMITS, parseScopes, type KeyLimits, type PublicKeyRecord } from '../../access/key-record.js';
import { REDIS_OPTIONS } from '../key-backend-options.js';
import { chooseKeyBackend } from '../../roles/key-backends.js';
import type { DataDir } from '../../common/data-dir.js';
import { intOption, parseCommandArgs, type Command } from '../command.js';
import { STORE_OPTIONS, chooseStore } from '../store-options.js';

const usage = `Usage: upi-risk keys <create|list|rotate|revoke> [options]

Manage API keys. Only a SHA-256 hash of each key is stored (DIR/keys.json,
mode 0600); a new key is printed once, as the last line of standard output.
A running server sees every change within a second. Every change is
recorded in the audit log (DIR/audit.ndjson, or the store's), with "cli" as
who made it.

  keys create [--name TEXT] [--plan NAME] [--scopes LIST] [--burst N --sustained N --window SECONDS]
                                --scopes: what the key may do, comma-separated from
                                screen (the lookups), ingest (POST /v1/admin/evidence)
                                and admin (default: screen)
  keys list [--json]            table of keys; --json prints [{id, name, plan, scopes, created_at, revoked_at}]
  keys rotate ID                new secret for key ID; the old one stops working at once
  keys revoke ID                key ID stops working at once

Every sub-command takes --data-dir DIR (default: $UPI_RISK_DATA_DIR or var/data),
or --redis URL (default: $REDIS_URL) to keep keys in Redis for several
replicas, with --redis-prefix PREFIX (default: upi-risk), or --store URL
(default: $UPI_RISK_STORE) and --store-schema NAME to keep them in the
fleet's PostgreSQL store (see upi-risk migrate).`;

export const keysCommand: Command = {
  name: 'keys',
  summary: 'create, list, rotate and revoke API keys',
  usage,
  async run(argv) {
    const [action, ...rest] = argv;
    // eslint-disable-next-line @typescript-eslint/switch-exhaustiveness-check -- any word: the default refuses all but these, a missing one included
    switch (action) {
      case 'create':
        return create(rest);
      case 'list':
        return list(rest);
      case 'rotate':
        return rotate(rest);
      case 'revoke':
        return revoke(rest);
      default:
        throw new ConfigError(`keys needs one of create, list, rotate, revoke${action === undefined ? '' : `, not ${JSON.stringify(action)}`}`);
    }
  },
};

const dirOption = { 'data-dir': { type: 'string' }, ...REDIS_OPTIONS, ...STORE_OPTIONS } as const;

/** Run `work` against the chosen key store and close it afterwards. */
async function withAdmin<T>(
  dir: DataDir,
  values: { redis?: string | undefined; 'redis-prefix'?: string | undefined; store?: string | undefined; 'store-schema'?: string | undefined },
  work: (admin: KeyAdmin) => Promise<T>,
): Promise<T> {
  const location = chooseStore(values);
  if (location !== null && (values.redis !== undefined || (process.env.REDIS_URL ?? '') !== '')) {
    throw new ConfigError('keys live in the store given with --store: leave out --redis (and REDIS_URL)');
  }
  const store = await chooseKeyBackend(dir, values, undefined, undefined, location);
  if (store.redis !== null && store.redis.status !== 'ready') {
    await store.close();
    throw new UnavailableError(ErrorCode.REDIS, `cannot reach Redis at ${redact(values.redis ?? process.env.REDIS_URL ?? '')}`);
  }
  try {
    return await work(new KeyAdmin(store.backend, store.audit));
  } finally {
    await store.close();
  }
}

async function create(argv: readonly string[]): Promise<number> {
  const { values } = parseCommandArgs(argv, {
    ...dirOption,
    name: { type: 'string' },
    plan: { type: 'string' },
    scopes: { type: 'string' },
    burst: { type: 'string' },
    sustained: { type: 'string' },
    window: { type: 'string' },
  });
  const given = [values.burst, values.sustained, values.window].filter((v) => v !== undefined).length;
  if (given !== 0 && given !== 3) throw new ConfigError('--burst, --sustained and --window go together');
  const limits: KeyLimits | null =
    given === 3
      ? {
          burst: intOption('burst', values.burst, 0, 1, MAX_KEY_LIMITS.burst),
          sustained: intOption('sustained', values.sustained, 0, 1, MAX_KEY_LIMITS.sustained),
          windowSeconds: intOption('window', values.window, 0, 1, MAX_KEY_LIMITS.windowSeconds),
        }
      : null;
  const plan = values.plan ?? 'default';
  if (!PLAN_NAME_PATTERN.test(plan)) throw new ConfigError('--plan must be 1 to 64 letters, digits, ".", "_" or "-"');
  const name = values.name ?? '';
  if (name.length > MAX_KEY_NAME_LENGTH) throw new ConfigError(`--name must be at most ${MAX_KEY_NAME_LENGTH} characters`);
  const scopes = values.scopes === undefined ? DEFAULT_SCOPES : parseScopes(values.scopes, (why) => new ConfigError(`--scopes: ${why}`));
  const { key, record } = await withAdmin(dataDir(values['data-dir']), values, (admin) => admin.create({ name, plan, limits, scopes }));
  process.stdout.write(`created key ${record.id} (plan ${record.plan}, scopes ${record.scopes.join(',')}); store it now, it is not shown again:\n${key}\n`);
  return 0;
}

async function list(argv: readonly string[]): Promise<number> {
  const { values } = parseCommandArgs(argv, { ...dirOption, json: { type: 'boolean' } });
  const keys = await withAdmin(dataDir(values['data-dir']), values, (admin) => admin.list());
  if (values.json === true) {
    const rows = keys.map((k) => ({ id: k.id, name: k.name, plan: k.plan, scopes: k.scopes, created_at: k.created_at, revoked_at: k.revoked_at }));
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return 0;
  }
  process.stdout.write(table(keys));
  return 0;
}

async function rotate(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, dirOption, true);
  const id = singleId(positionals);
  const { key, record } = await withAdmin(dataDir(values['data-dir']), values, (admin) => admin.rotate(id));
  process.stdout.write(`rotated key ${record.id}; the previous key no longer works. New key:\n${key}\n`);
  return 0;
}

async function revoke(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, dirOption, true);
  const id = singleId(positionals);
  const record = await withAdmin(dataDir(values['data-dir']), values, (admin) => admin.revoke(id));
  process.stdout.write(`revoked key ${record.id} at ${record.revoked_at}\n`);
  return 0;
}

function singleId(positionals: readonly string[]): string {
  if (positionals.length !== 1) throw new ConfigError('give exactly one key id (see upi-risk keys list)');
  return positionals[0]!;
}

function table(keys: readonly PublicKeyRecord[]): string {
  const header = ['ID', 'NAME', 'PLAN', 'SCOPES', 'LIMITS', 'CREATED', 'STATUS'];
  const rows = keys.map((k) => [
    k.id,
    k.name,
    k.plan,
    k.scopes.join(','),
    k.limits === null ? '(plan)' : `${k.limits.burst}/s, ${k.limits.sustained}/${k.limits.windowSeconds}s`,
    k.created_at,
    k.revoked_at === null ? (k.rotated_at === null ? 'active' : `active, rotated ${k.rotated_at}`) : `revoked ${k.revoked_at}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}
