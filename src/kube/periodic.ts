import type { Logger } from 'pino';

/**
 * A level-triggered pass run again `periodMs` after each one ends, never two at once: the small
 * controllers that list what they own and move it one step (ComputeDomains). A failed pass is logged
 * and the next one tries again; `stop` waits for the pass in flight.
 */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly o: { periodMs: number; log: Logger; what: string },
  ) {}

  start(): void {
    const loop = (): void => {
      if (this.stopped) return;
      this.running = this.pass()
        .catch((e: unknown) => {
          this.o.log.warn({ err: e instanceof Error ? e.message : String(e) }, this.o.what);
        })
        .finally(() => {
          this.running = null;
          if (!this.stopped) this.timer = setTimeout(loop, this.o.periodMs);
        });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
