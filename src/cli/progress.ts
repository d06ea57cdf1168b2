import cliProgress from 'cli-progress';

/**
 * A progress bar on a terminal, nothing when output is redirected (logs and
 * CI should not fill with carriage returns).
 */
export function progressReporter<T>(describe: (value: T) => { label: string; done: number; total: number }) {
  const enabled = process.stderr.isTTY === true;
  let bar: cliProgress.SingleBar | null = null;
  let label = '';
  return {
    update: (value: T) => {
      if (!enabled) return;
      const p = describe(value);
      if (bar === null || p.label !== label) {
        bar?.stop();
        label = p.label;
        bar = new cliProgress.SingleBar(
          { format: `${p.label.padEnd(9)} [{bar}] {percentage}% | {value}/{total}`, stream: process.stderr, hideCursor: true },
          cliProgress.Presets.shades_classic,
        );
        bar.start(Math.max(1, p.total), p.done);
      } else {
        bar.update(p.done);
      }
    },
    stop: () => {
      bar?.stop();
      bar = null;
    },
  };
}
