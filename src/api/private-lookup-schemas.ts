import { Type, type TSchema } from '@sinclair/typebox';
import { Nullable, RiskCategorySchema, Timestamp, strict } from './schemas.js';

/**
 * JSON Schemas of private lookups (docs/api.md, "Private lookups"): range
 * answers and the local mirror's manifest and public key. The OpenAPI
 * document and the contract tests use them.
 */
const closed = <T extends Parameters<typeof Type.Object>[0]>(properties: T) => Type.Object(properties, { additionalProperties: false });

const RangeEntrySchema = closed({
  suffix: Type.String({ pattern: '^[0-9a-f]{59}$', description: 'The other 59 hex digits of h(upi)' }),
  status: Type.Literal('FLAGGED'),
  risk_category: RiskCategorySchema,
  confidence: Type.Number({ minimum: 0, maximum: 1 }),
  cluster_id: Nullable(Type.String({ pattern: '^MC-[0-9]+$' })),
});

export const RangeAnswerSchema = strict(
  {
    prefix: Type.String({ pattern: '^[0-9a-f]{5}$' }),
    data_version: Type.String(),
    entries: Type.Array(RangeEntrySchema, { description: 'Every flagged VPA whose hash begins with the prefix, and padding entries, in suffix order' }),
  },
  'RangeAnswer',
);

export const MirrorManifestSchema = strict(
  {
    version: Type.Integer({ minimum: 1, description: 'Increases with every mirror version the service makes' }),
    created_at: Timestamp,
    count: Type.Integer({ minimum: 0, description: 'Entries of this version' }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the entry set of this version, as a full file lists it (after its header)' }),
    full: closed({ url: Type.String(), bytes: Type.Integer({ minimum: 0 }) }),
    diffs: Type.Array(closed({ from: Type.Integer({ minimum: 1 }), url: Type.String(), bytes: Type.Integer({ minimum: 0 }) })),
    signature: Type.String({ description: 'Base64 of the Ed25519 signature of the canonical text of the other fields' }),
  },
  'MirrorManifest',
);

export const MirrorPublicKeySchema = strict(
  { public_key: Type.String({ description: 'Base64 of the 32 bytes of the Ed25519 public key that signs the manifests' }) },
  'MirrorPublicKey',
);

export const PRIVATE_LOOKUP_SCHEMAS: Readonly<Record<string, TSchema>> = {
  RangeAnswer: RangeAnswerSchema,
  MirrorManifest: MirrorManifestSchema,
  MirrorPublicKey: MirrorPublicKeySchema,
};
