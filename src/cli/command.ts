import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from '../common/errors.js';

/** One `upi-risk` sub-command. `run` resolves to the process exit code. */
export interface Command {
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Full `--help` text. */
  readonly usage: string;
  run(argv: readonly string[]): Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * Parse a command's arguments strictly: unknown options are errors, not
 * silently ignored typos. Throws ConfigError with the parser's message.
 */
export function parseCommandArgs<T extends Options>(argv: readonly string[], options: T, allowPositionals = false) {
  try {
    return parseArgs({ args: [...argv], options, allowPositionals, strict: true });
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}

/** The longest age `--evidence-max-age-days` takes: a hundred years. */
export const MAX_EVIDENCE_AGE_DAYS = 36_500;

/** `--evidence-max-age-days` in ms (BuildOptions.evidenceMaxAgeMs): 0, evidence never expires, when absent. */
export function evidenceMaxAge(value: string | undefined): number {
  return intOption('evidence-max-age-days', value, 0, 1, MAX_EVIDENCE_AGE_DAYS) * 86_400_000;
}

/** A whole number option within [min, max]; throws ConfigError naming the option. */
export function intOption(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new ConfigError(`--${name} must be a whole number, got ${JSON.stringify(value)}`);
  const n = Number(value);
  if (n < min || n > max) throw new ConfigError(`--${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}
