import v8 from 'node:v8';

/**
 * Gives a burst's garbage back once the fleet is quiet again. Publishing thousands of nodes, a relist,
 * or the flood of watch events that echoes the fleet's own writes leaves V8's old space grown far past
 * what the fleet keeps (74 MiB of old space for 32 MiB used, 10,000 nodes); left to V8's heuristics it
 * stays resident for an unpredictable while. After enough activity and a quiet spell, one
 * memory-reducing collection settles the process at the size of its state.
 */

export interface SettleOptions {
  /** A counter that grows with the fleet's work (requests sent, events received). */
  activity(): number;
  /** The collection to run; null (no `--expose-gc`) makes the settler do nothing. */
  collect: (() => void) | null;
  /** Work since the last collection that makes the next quiet spell worth one. */
  minActivity?: number;
  quietMs?: number;
  /** Work per tick that still counts as quiet. */
  trickle?: number;
  tickMs?: number;
  now?: () => number;
}

export class MemorySettler {
  private timer: NodeJS.Timeout | undefined;
  private seen = 0;
  /** Work of busy ticks since the last collection; a trickle adds nothing. */
  private burst = 0;
  private lastBusy = 0;
  /** Collections run, for tests and metrics. */
  collections = 0;
  private readonly now: () => number;

  constructor(private readonly o: SettleOptions) {
    this.now = o.now ?? (() => performance.now());
  }

  start(): void {
    if (!this.o.collect || this.timer) return;
    this.lastBusy = this.now();
    this.timer = setInterval(() => {
      this.tick();
    }, this.o.tickMs ?? 500);
    // A settler alone must not keep the process alive.
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One look: busy since the last one, or quiet long enough after enough work to collect. */
  tick(): void {
    const collect = this.o.collect;
    if (!collect) return;
    const n = this.o.activity();
    const now = this.now();
    // A trickle (a node's heartbeat, a watch reopened) is quiet enough: on a cluster of thousands of
    // nodes something always moves, and waiting for nothing at all never collected.
    const delta = n - this.seen;
    this.seen = n;
    if (delta > (this.o.trickle ?? 10)) {
      this.burst += delta;
      this.lastBusy = now;
      return;
    }
    if (this.burst < (this.o.minActivity ?? 1000)) return;
    if (now - this.lastBusy < (this.o.quietMs ?? 2000)) return;
    this.burst = 0;
    this.collections++;
    collect();
  }
}

/**
 * A full, synchronous, compacting collection where the process was started with `--expose-gc` (as the
 * cluster, the benchmark and the chart run the fleet). Compacting matters: the fleet's state is built
 * while it publishes, between the garbage of its writes, so a plain full collection leaves its few live
 * objects spread over pages it cannot free (68 MiB of old space for 32 MiB live at 10,000 nodes);
 * compaction moves them together and V8 hands the emptied pages back within a second or two. V8 compacts
 * on every full collection only while its flag says so, so the flag is set for this one.
 *
 * Called without an argument on purpose: Node 20's V8 takes an options object (`{type: 'major', flavor:
 * 'last-resort'}`) without complaint and then leaves the garbage where it is, which made this settler a
 * no-op until a test caught it.
 */
export function memoryReducingGc(): (() => void) | null {
  const gc: unknown = (globalThis as { gc?: unknown }).gc;
  if (typeof gc !== 'function') return null;
  return () => {
    v8.setFlagsFromString('--compact-on-every-full-gc');
    try {
      (gc as () => void)();
    } finally {
      v8.setFlagsFromString('--no-compact-on-every-full-gc');
    }
  };
}
