/**
 * Progress of long work (KWOK nodes created, taints lifted, slices published, a bench's phase): on a
 * terminal one live line, redrawn at most every `redrawMs`; elsewhere (CI logs) one line per tenth of
 * the way, so a log stays short. Never on stdout, which carries a command's output.
 */
/** A terminal to redraw one line on, with the prefix the log's lines get. */
export interface Tty {
  write(s: string): unknown;
  prefix: string;
}

/** A log of whole lines; one that writes to a terminal says so, for progress to redraw a line there. */
export type Log = ((line: string) => void) & { readonly tty?: Tty };

/** Lines to `stream` after `prefix`; progress redraws one line there when it is a terminal. */
export function streamLog(prefix: string, stream: NodeJS.WriteStream): Log {
  const log = (line: string): void => {
    stream.write(`${prefix}${line}\n`);
  };
  return stream.isTTY ? Object.assign(log, { tty: { write: (s: string) => stream.write(s), prefix } }) : log;
}

export interface ProgressOptions {
  /** What is counted, e.g. `creating KWOK nodes`. */
  what: string;
  total: number;
  /** Where lines go; on a terminal (`log.tty`) one line is redrawn instead. */
  log: Log;
  now?: () => number;
  redrawMs?: number;
  /** The line for `done` of `total` after `seconds`; default: counts, rate and time left. */
  format?: (done: number, total: number, seconds: number) => string;
}

export class Progress {
  private readonly t0: number;
  private readonly now: () => number;
  private lastDraw = -Infinity;
  private lastTenth = 0;
  private done = 0;

  constructor(private readonly o: ProgressOptions) {
    this.now = o.now ?? (() => performance.now());
    this.t0 = this.now();
  }

  /** `done` of `total` so far. */
  update(done: number): void {
    this.done = Math.max(0, Math.min(done, this.o.total));
    const t = this.now();
    if (this.o.log.tty) {
      if (t - this.lastDraw < (this.o.redrawMs ?? 250)) return;
      this.lastDraw = t;
      this.o.log.tty.write(`\r\x1b[2K${this.o.log.tty.prefix}${this.line(t)}`);
      return;
    }
    const tenth = this.o.total > 0 ? Math.floor((this.done * 10) / this.o.total) : 10;
    if (tenth <= this.lastTenth || tenth >= 10) return;
    this.lastTenth = tenth;
    this.o.log(this.line(t));
  }

  /** The last line, once: the live line ends with a newline, a log gets its 100%. */
  finish(): void {
    const line = this.line(this.now());
    if (this.o.log.tty) {
      this.o.log.tty.write(`\r\x1b[2K${this.o.log.tty.prefix}${line}\n`);
      return;
    }
    this.o.log(line);
  }

  /** `creating KWOK nodes: 12,345/50,000 (24%), 103/s, ~6m left`. */
  line(t: number): string {
    const s = (t - this.t0) / 1000;
    const { total } = this.o;
    if (this.o.format) return this.o.format(this.done, total, s);
    const pct = total > 0 ? Math.floor((this.done * 100) / total) : 100;
    const rate = s > 0 ? this.done / s : 0;
    const left = rate > 0 && this.done < total ? `, ~${duration((total - this.done) / rate)} left` : '';
    return `${this.o.what}: ${count(this.done)}/${count(total)} (${pct}%), ${rateText(rate)}, ${duration(s)}${left}`;
  }
}

const count = (n: number): string => n.toLocaleString('en-US');

function rateText(r: number): string {
  return r >= 10 ? `${Math.round(r)}/s` : `${r.toFixed(1)}/s`;
}

/**
 * Work timed against an estimate (a build, against how long the last one took here): `what: 2m10s of
 * ~25m (8%)`, at most 99% until it ends; with no estimate only the time so far, on a terminal, and
 * nothing in a log until the end.
 */
export function timedProgress(what: string, estimateS: number, log: Log): { stop(): void } {
  const total = Number.isFinite(estimateS) && estimateS > 0 ? estimateS : 0;
  const p = new Progress({
    what,
    total,
    log,
    format: (done, all, s) =>
      all > 0
        ? `${what}: ${duration(s)} of ~${duration(all)} (${Math.min(99, Math.floor((s * 100) / all))}%)`
        : `${what}: ${duration(s)}`,
  });
  const started = performance.now();
  const timer = setInterval(() => {
    const s = (performance.now() - started) / 1000;
    p.update(total > 0 ? Math.min(s, total * 0.99) : 0);
  }, 1000);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      // A terminal's live line ends here; a log has said enough by its tenths.
      if (log.tty) p.finish();
    },
  };
}

/** 42s, 6m10s, 1h05m. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
