import type { DocumentParts } from './openapi-parts.js';

/** The tag of these operations, for the document's list. */
export const PRIVATE_LOOKUP_TAGS = [
  {
    name: 'PrivateLookups',
    description: 'Screening without naming the payee: range lookups by a hash prefix, and a signed local mirror of the flagged VPAs (a key with the screen scope)',
  },
];

/** Range lookups and the mirror (docs/api.md, "Private lookups"). */
export function privateLookupPaths({ ref, ok, error, common }: DocumentParts): Record<string, unknown> {
  const file = (description: string) => ({
    '200': {
      description: `${description}: the mirror file format of docs/api.md, gzip or Brotli when asked (Accept-Encoding); ETag, Cache-Control private, max-age=31536000, immutable`,
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    },
  });
  const version = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'integer', minimum: 1 } });
  const mirrorUnavailable = { '503': error('service_unavailable: no mirror signing key (upi-risk mirror-key create; in a fleet, in the builders\' data directories), or the first mirror version is being made') };
  return {
    '/v1/verify/upi/range/{prefix}': {
      get: {
        operationId: 'verifyUpiRange',
        tags: ['PrivateLookups'],
        summary: 'Every flagged VPA whose h(upi) begins with a 5-hex-digit prefix; the caller finds its own suffix, or concludes CLEARED',
        description:
          'h(upi) is the SHA-256 of the lower-cased VPA, in lowercase hex. Padded by default: every answer of one data version has as many entries and as many bytes. Counts as one request. ETag per prefix and data version; If-None-Match answers 304.',
        parameters: [
          { name: 'prefix', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{5}$' } },
          { name: 'Upi-Risk-Padding', in: 'header', required: false, schema: { type: 'string', enum: ['on', 'off'], default: 'on' } },
          { name: 'If-None-Match', in: 'header', required: false, schema: { type: 'string' } },
        ],
        responses: {
          ...ok('The range', ref('RangeAnswer')),
          '304': { description: 'Not modified: the ETag names this prefix at the data version served' },
          ...common,
          '503': error('service_unavailable: the ranges of a snapshot just served are being made; retry after Retry-After seconds'),
        },
      },
    },
    '/v1/mirror/public-key': {
      get: {
        operationId: 'getMirrorPublicKey',
        tags: ['PrivateLookups'],
        summary: 'The Ed25519 public key that signs mirror manifests',
        responses: { ...ok('The key', ref('MirrorPublicKey')), ...common, ...mirrorUnavailable },
      },
    },
    '/v1/mirror/manifest': {
      get: {
        operationId: 'getMirrorManifest',
        tags: ['PrivateLookups'],
        summary: 'The newest mirror version: its entry count and digest, the full file, the diffs from older versions, signed',
        responses: { ...ok('The manifest', ref('MirrorManifest')), ...common, ...mirrorUnavailable },
      },
    },
    '/v1/mirror/full/{version}': {
      get: {
        operationId: 'getMirrorFull',
        tags: ['PrivateLookups'],
        summary: 'Every entry of a mirror version',
        parameters: [version('version')],
        responses: { ...file('The full file'), ...common, '404': error('not_found: that version is not kept'), ...mirrorUnavailable },
      },
    },
    '/v1/mirror/diff/{from}/{to}': {
      get: {
        operationId: 'getMirrorDiff',
        tags: ['PrivateLookups'],
        summary: 'The entries added, changed and removed from one mirror version to a later one',
        parameters: [version('from'), version('to')],
        responses: { ...file('The diff file'), ...common, '404': error('not_found: no diff between those versions is kept'), ...mirrorUnavailable },
      },
    },
  };
}
