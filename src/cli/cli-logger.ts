import { pino } from 'pino';
import type { Logger } from '../common/logger.js';

/**
 * The JSON-lines log of a one-shot command (build, ingest), on standard
 * error beside its messages, as `serve` logs; synchronous so that lines
 * are out before the command exits.
 */
export function commandLogger(command: string): Logger {
  return pino({ level: 'info', base: { service: 'upi-risk', command } }, pino.destination({ dest: 2, sync: true }));
}
