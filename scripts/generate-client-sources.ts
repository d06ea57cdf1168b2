/**
 * Writes the client's sources that are derived from the server's, so the
 * client cannot drift from it: packages/client/src/wire.ts, the types of
 * the v1 wire shapes, from the component schemas of the OpenAPI document
 * (the TypeBox schemas that validate requests); and copies of the server's
 * pure modules the client runs too (the package is built and shipped on its
 * own, so it cannot import them): packages/client/src/advice-table.ts of
 * src/api/advice.ts, vpa-hash.ts of src/vpa/vpa-hash.ts and
 * mirror-format.ts of src/mirror/mirror-format.ts.
 * `npm run generate:client` runs it; a unit test
 * (test/unit/client-generated-sources.test.ts) fails when any is stale.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile, type JSONSchema } from 'json-schema-to-typescript';
import { openApiDocument } from '../src/api/openapi.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLIENT_SRC = join(ROOT, 'packages', 'client', 'src');
const ADVICE_SOURCE = join(ROOT, 'src', 'api', 'advice.ts');
const VPA_HASH_SOURCE = join(ROOT, 'src', 'vpa', 'vpa-hash.ts');
const MIRROR_FORMAT_SOURCE = join(ROOT, 'src', 'mirror', 'mirror-format.ts');
export const REGENERATE_COMMAND = 'npm run generate:client';

/**
 * The components the client reads or sends, by OpenAPI name, with the name
 * each takes in TypeScript (`Error` would shadow the global class).
 */
const CLIENT_COMPONENTS: Readonly<Record<string, string>> = {
  VpaVerdict: 'VpaVerdict',
  Source: 'Source',
  BatchItem: 'BatchItem',
  BatchRequest: 'BatchRequest',
  BatchResponse: 'BatchResponse',
  Cluster: 'Cluster',
  Error: 'ErrorBody',
  RiskCategory: 'RiskCategory',
  SourceCategory: 'SourceCategory',
  WatchlistCreateRequest: 'WatchlistCreateRequest',
  Watchlist: 'Watchlist',
  NewWatchlist: 'NewWatchlist',
  WatchlistList: 'WatchlistList',
  WatchlistSecret: 'WatchlistSecret',
  WatchlistDeleted: 'WatchlistDeleted',
  WatchVpasRequest: 'WatchVpasRequest',
  WatchVpasAdded: 'WatchVpasAdded',
  WatchVpasRemoved: 'WatchVpasRemoved',
  WatchedVpasPage: 'WatchedVpasPage',
  WatchEvent: 'WatchEvent',
  WatchEventWithDelivery: 'WatchEventWithDelivery',
  WatchEventPage: 'WatchEventPage',
  Redelivered: 'Redelivered',
  DisputeCreateRequest: 'DisputeCreateRequest',
  Dispute: 'Dispute',
  DisputeList: 'DisputeList',
  DisputeConflict: 'DisputeConflict',
  ReportCreateRequest: 'ReportCreateRequest',
  ReportReceipt: 'ReportReceipt',
  DataVersion: 'DataVersion',
  AnswerHistory: 'AnswerHistory',
  AnswerChange: 'AnswerChange',
};

/**
 * Shapes the schemas write inline (no `$id`), named here so the client can
 * name them and each is declared once: where the first one stands (a
 * path may start at a shape named above it).
 */
const NAMED_SHAPES: Readonly<Record<string, readonly string[]>> = {
  ClusterMember: ['Cluster', 'properties', 'members', 'items'],
  ClusterSource: ['Cluster', 'properties', 'top_sources', 'items'],
  WatchFilters: ['Watchlist', 'properties', 'filters'],
  WatchDelivery: ['WatchEventWithDelivery', 'properties', 'delivery'],
  WatchDeliveryAttempt: ['WatchDelivery', 'properties', 'attempts', 'items'],
};

const banner = (what: string) => `/**
 * ${what}.
 * Written by scripts/generate-client-sources.ts; do not edit:
 * \`${REGENERATE_COMMAND}\` rewrites this file.
 */`;

/** Each derived file of the client, by its path, and what it should hold. */
export const GENERATED_SOURCES: Readonly<Record<string, () => Promise<string>>> = {
  [join(CLIENT_SRC, 'wire.ts')]: generateWireTypes,
  [join(CLIENT_SRC, 'advice-table.ts')]: copyAdvice,
  [join(CLIENT_SRC, 'vpa-hash.ts')]: copyVpaHash,
  [join(CLIENT_SRC, 'mirror-format.ts')]: copyMirrorFormat,
};

/** What wire.ts should hold for the current OpenAPI document. */
async function generateWireTypes(): Promise<string> {
  const components = (openApiDocument('0').components as { schemas: Record<string, unknown> }).schemas;
  const definitions: Record<string, JSONSchema> = {};
  for (const [component, tsName] of Object.entries(CLIENT_COMPONENTS)) {
    const schema = components[component];
    if (schema === undefined) throw new Error(`the OpenAPI document has no component schema ${component}`);
    definitions[component] = { ...(withReferences(schema) as JSONSchema), title: tsName };
  }
  for (const [name, [component, ...path]] of Object.entries(NAMED_SHAPES)) {
    const shape = path.reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], definitions[component!]);
    if (shape === undefined) throw new Error(`the OpenAPI document has no ${[component, ...path].join('.')} to name ${name}`);
    const text = JSON.stringify(shape);
    for (const [key, definition] of Object.entries(definitions)) definitions[key] = withNamedShape(definition, text, name) as JSONSchema;
    definitions[name] = { ...(shape as JSONSchema), title: name };
  }
  // A root naming every component, so each is declared once and reachable.
  const root: JSONSchema = {
    title: 'WireTypes',
    description: 'Every wire type, by its OpenAPI component name.',
    type: 'object',
    properties: Object.fromEntries(Object.keys(definitions).map((name) => [name, { $ref: `#/definitions/${name}` }])),
    required: Object.keys(definitions),
    additionalProperties: false,
    definitions,
  };
  return compile(root, 'WireTypes', {
    bannerComment: banner("The v1 wire shapes, from the OpenAPI document's component schemas\n * (src/api/openapi.ts)"),
    additionalProperties: false,
    // Plain arrays: a tuple type per permitted length helps no caller.
    ignoreMinAndMaxItems: true,
    strictIndexSignatures: true,
    style: { singleQuote: true, printWidth: 120 },
  });
}

/** src/api/advice.ts as it is, under a banner. */
function copyAdvice(): Promise<string> {
  return copySource(ADVICE_SOURCE, "A copy of src/api/advice.ts: the spec's advice table");
}

/** src/vpa/vpa-hash.ts as it is, under a banner. */
function copyVpaHash(): Promise<string> {
  return copySource(VPA_HASH_SOURCE, 'A copy of src/vpa/vpa-hash.ts: h(upi), the hash range lookups and the mirror name VPAs by');
}

/** src/mirror/mirror-format.ts as it is, under a banner. */
function copyMirrorFormat(): Promise<string> {
  return copySource(MIRROR_FORMAT_SOURCE, "A copy of src/mirror/mirror-format.ts: the local mirror's files and manifest");
}

/** A server source as it is, under a banner saying `what` it is; it must stay free of imports to be copied. */
async function copySource(path: string, what: string): Promise<string> {
  const source = await readFile(path, 'utf8');
  // `from` followed by a module's name: a parameter named `from` is no re-export.
  if (/^\s*(import|export\s+[^;]*\bfrom\s*['"])/m.test(source)) {
    throw new Error(`${path} imports another module: the client can no longer copy it as it is`);
  }
  return `${banner(what)}\n\n${source}`;
}

/**
 * The document names a nested component with a `$ref`, which points here
 * into the root's definitions, so each is declared once; a component the
 * client does not list cannot be reached from one it does.
 */
function withReferences(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => withReferences(item));
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  // TypeBox's Never is `{ not: {} }`, which the generator would read as any object.
  if (Object.keys(record).length === 1 && isEmptyObject(record.not)) return { tsType: 'never' };
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(record)) {
    if (key === '$ref' && typeof child === 'string') {
      const component = child.replace('#/components/schemas/', '');
      if (!(component in CLIENT_COMPONENTS)) throw new Error(`a client component refers to ${child}, which CLIENT_COMPONENTS does not list`);
      out[key] = `#/definitions/${component}`;
    } else out[key] = withReferences(child);
  }
  return out;
}

/** `value` with every subschema equal to `text` (as JSON) replaced by a `$ref` to `name`. */
function withNamedShape(value: unknown, text: string, name: string): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (JSON.stringify(value) === text) return { $ref: `#/definitions/${name}` };
  if (Array.isArray(value)) return value.map((item) => withNamedShape(item, text, name));
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, withNamedShape(child, text, name)]));
}

function isEmptyObject(value: unknown): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const [path, generate] of Object.entries(GENERATED_SOURCES)) {
    await writeFile(path, await generate());
    process.stdout.write(`wrote ${path}\n`);
  }
}
