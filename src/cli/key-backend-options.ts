/** The options every command that touches keys or quotas shares. */
export const REDIS_OPTIONS = {
  redis: { type: 'string' },
  'redis-prefix': { type: 'string' },
} as const;
