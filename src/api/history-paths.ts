import { Type, type TSchema } from '@sinclair/typebox';
import type { DocumentParts } from './openapi-parts.js';
import { Nullable, Timestamp, strict } from './schemas.js';

/**
 * The record of what was served (docs/api.md, "Data versions"): its JSON
 * Schema and its operation, for the OpenAPI document and the contract tests.
 */
export const DataVersionSchema = strict(
  {
    version: Type.String({ description: 'The data version, as X-Data-Version carried it' }),
    from: Timestamp,
    until: Nullable(Type.String({ format: 'date-time', description: 'When the next state replaced it or its server stopped; null while it is served' })),
    snapshot: Type.String({ pattern: '^[!-~]{1,64}$', description: 'The snapshot served' }),
    position: Type.Integer({ minimum: 0, description: 'The live delta\'s position over the snapshot; 0 for the snapshot alone' }),
  },
  'DataVersion',
  'When a data version was served, and what it held',
);

export const HISTORY_SCHEMAS: Readonly<Record<string, TSchema>> = { DataVersion: DataVersionSchema };

export const HISTORY_TAGS = [{ name: 'History', description: 'What the service served, and when (a key with the screen scope)' }];

export function historyPaths({ ref, ok, error, common }: DocumentParts): Record<string, unknown> {
  return {
    '/v1/data-versions/{version}': {
      get: {
        operationId: 'getDataVersion',
        tags: ['History'],
        summary: 'When a data version (an answer\'s X-Data-Version) was served, and the snapshot and delta position it held',
        parameters: [{ name: 'version', in: 'path', required: true, description: 'The version, percent-encoded (+ as %2B)', schema: { type: 'string' } }],
        responses: {
          ...ok('The version', ref('DataVersion')),
          ...common,
          '404': error('not_found: the version was not served since the record of versions began'),
          '503': error('service_unavailable: the record of versions served cannot be read'),
        },
      },
    },
  };
}
