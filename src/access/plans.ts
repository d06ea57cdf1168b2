import { readFile } from 'node:fs/promises';
import { ConfigError } from '../common/errors.js';
import { keyLimitsProblem, MAX_KEY_LIMITS, type KeyLimits } from './key-record.js';

/**
 * Rate-limit plans. Each API key names a plan (or carries its own limits):
 * `burst` requests per second and `sustained` requests per `windowSeconds`.
 * Requests that fail authentication are limited per client IP by
 * `authFailuresPerIp`. The file shipped in config/plans.json holds the
 * defaults; `serve --plans FILE` replaces it.
 */
export interface PlansConfig {
  readonly plans: ReadonlyMap<string, KeyLimits>;
  readonly authFailuresPerIp: { readonly points: number; readonly windowSeconds: number };
}

export const DEFAULT_PLANS_FILE = new URL('../../../config/plans.json', import.meta.url);

export async function loadPlans(path: string | URL = DEFAULT_PLANS_FILE): Promise<PlansConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read plans file ${String(path)}: ${(error as Error).message}`, { cause: error });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`plans file ${String(path)} is not valid JSON`, { cause: error });
  }
  return parsePlans(value, String(path));
}

export function parsePlans(value: unknown, source = 'plans'): PlansConfig {
  const fail = (why: string) => new ConfigError(`${source}: ${why}`);
  if (typeof value !== 'object' || value === null) throw fail('not a JSON object');
  const file = value as Record<string, unknown>;
  if (file.version !== 1) throw fail(`unsupported version ${JSON.stringify(file.version)} (expected 1)`);
  if (typeof file.plans !== 'object' || file.plans === null || Array.isArray(file.plans)) throw fail('"plans" must be an object');
  const plans = new Map<string, KeyLimits>();
  for (const [name, raw] of Object.entries(file.plans as Record<string, unknown>)) {
    plans.set(name, limits(raw, `plans.${name}`, fail));
  }
  if (!plans.has('default')) throw fail('a "default" plan is required (keys without a known plan use it)');
  const auth = file.authFailuresPerIp as Record<string, unknown> | undefined;
  if (typeof auth !== 'object' || auth === null) throw fail('"authFailuresPerIp" must be an object');
  if (!positiveInt(auth.points) || !positiveInt(auth.windowSeconds) || (auth.windowSeconds as number) > MAX_KEY_LIMITS.windowSeconds) {
    throw fail(`"authFailuresPerIp" needs whole "points" from 1 and "windowSeconds" from 1 to ${MAX_KEY_LIMITS.windowSeconds}`);
  }
  return { plans, authFailuresPerIp: { points: auth.points as number, windowSeconds: auth.windowSeconds as number } };
}

function limits(raw: unknown, where: string, fail: (why: string) => Error): KeyLimits {
  const problem = keyLimitsProblem(raw);
  if (problem !== null) throw fail(`${where}: ${problem}`);
  const r = raw as KeyLimits;
  return { burst: r.burst, sustained: r.sustained, windowSeconds: r.windowSeconds };
}

function positiveInt(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}
