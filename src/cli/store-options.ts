import { ConfigError } from '../common/errors.js';
import { DEFAULT_STORE_SCHEMA, checkSchemaName, checkStoreUrl, type StoreLocation } from '../store/postgres.js';

/** The options of every command that can use the fleet's PostgreSQL store. */
export const STORE_OPTIONS = {
  store: { type: 'string' },
  'store-schema': { type: 'string' },
} as const;

export const STORE_USAGE = `  --store URL           the fleet's PostgreSQL store, postgres://USER@HOST:PORT/DB
                        (default: $UPI_RISK_STORE; without one, the data directory)
  --store-schema NAME   the schema in it (default: $UPI_RISK_STORE_SCHEMA or ${DEFAULT_STORE_SCHEMA})`;

/** The store named by --store (or $UPI_RISK_STORE), or null for the embedded mode; --store-schema without a store is a usage error. */
export function chooseStore(values: { store?: string | undefined; 'store-schema'?: string | undefined }): StoreLocation | null {
  const url = values.store ?? process.env.UPI_RISK_STORE;
  if (url === undefined || url === '') {
    if (values['store-schema'] !== undefined) throw new ConfigError('--store-schema needs --store');
    return null;
  }
  return { url: checkStoreUrl(url), schema: checkSchemaName(values['store-schema'] ?? process.env.UPI_RISK_STORE_SCHEMA ?? DEFAULT_STORE_SCHEMA) };
}

/** As chooseStore, for a command that needs a store. */
export function requireStore(values: { store?: string | undefined; 'store-schema'?: string | undefined }, command: string): StoreLocation {
  const location = chooseStore(values);
  if (location === null) throw new ConfigError(`${command} needs --store URL (or $UPI_RISK_STORE)`);
  return location;
}
