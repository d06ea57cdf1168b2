/**
 * The logging surface the engine needs. The server plugs its structured
 * logger in; tools and tests use the stderr or silent ones.
 */
export interface Logger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export const silentLogger: Logger = {
  info() {},
  warn() {},
  error() {},
};

/** One JSON object per line on stderr. */
export const stderrLogger: Logger = {
  info: (fields, message) => write('info', fields, message),
  warn: (fields, message) => write('warn', fields, message),
  error: (fields, message) => write('error', fields, message),
};

function write(level: string, fields: Record<string, unknown>, message: string): void {
  process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg: message, ...fields })}\n`);
}
