/**
 * Progress of long commands (backup, export, import): a bar on standard error when it is a
 * terminal, nothing otherwise, so standard output stays clean for data and `--json` results.
 * The bar is cli-progress; a command reports counts and never formats the bar itself.
 */
import cliProgress from 'cli-progress';

export interface Progress {
  /** Set the total once it is known (bytes, events); without one the bar shows a count. */
  total(n: number): void;
  /** Add `n` units done. */
  advance(n: number): void;
  /** The units done so far. */
  readonly done: number;
  /** Remove the bar (call on success and on failure alike). */
  stop(): void;
}

export interface ProgressOptions {
  /** What is counted, shown after the figures: "events", "bytes". */
  unit: string;
  /** Known up front, if it is. */
  total?: number;
  /** The stream to draw on; standard error by default. Drawn only when it is a terminal. */
  stream?: NodeJS.WriteStream;
  /** Force the bar off (e.g. `--json`). */
  quiet?: boolean;
}

export function startProgress(label: string, options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  let done = 0;
  let total = options.total ?? 0;
  if (options.quiet || !stream.isTTY) {
    return {
      total: (n) => {
        total = n;
      },
      advance: (n) => {
        done += n;
      },
      get done() {
        return done;
      },
      stop: () => {},
    };
  }
  const withTotal = `${label} [{bar}] {percentage}% {value}/{total} ${options.unit} {duration_formatted}`;
  const countOnly = `${label} {value} ${options.unit} {duration_formatted}`;
  const bar = new cliProgress.SingleBar(
    { stream, format: total > 0 ? withTotal : countOnly, hideCursor: false, clearOnComplete: true, fps: 10 },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  let stopped = false;
  return {
    total: (n) => {
      total = n;
      bar.setTotal(n);
      // The format is read at every redraw; cli-progress's types do not list its options.
      (bar as unknown as { options: { format: string } }).options.format = withTotal;
    },
    advance: (n) => {
      done += n;
      bar.update(done);
    },
    get done() {
      return done;
    },
    stop: () => {
      if (stopped) return;
      stopped = true;
      bar.stop();
    },
  };
}
