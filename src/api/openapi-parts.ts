/** What the OpenAPI document's path groups are written with (openapi.ts builds them once). */
export interface DocumentParts {
  readonly ref: (id: string) => unknown;
  readonly json: (schema: unknown) => unknown;
  readonly ok: (description: string, schema: unknown) => Record<string, unknown>;
  readonly error: (description: string) => unknown;
  readonly common: Record<string, unknown>;
}
