import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';

/**
 * How every `/metrics` of fakegpu answers a scrape (dcgm-exporter's text and each process's own
 * metrics): the text is written piece by piece as it is made, the event loop given back between pieces,
 * a client that reads slowly waited for (`drain`) but only so long, one that leaves stops the writing,
 * and only a few scrapes run at once: a scrape of 10,000 nodes is 400 MiB of text, which neither the
 * fleet's memory nor its publishing could take twice over at once.
 */
export interface ScrapeLimits {
  /** Scrapes answered at once; one more is answered 429 with `Retry-After`. */
  maxConcurrent: number;
  /** How long a scrape waits for its client to take more text before the response is cut. */
  stallTimeoutMs: number;
  /**
   * How long a scrape may take in all before it is cut: a client that takes a little now and then never
   * stalls, and two of them would otherwise hold `/metrics` shut.
   */
  deadlineMs: number;
}

/**
 * Two: Prometheus scrapes a target once per interval, so two at once are a second scraper (or a
 * person's curl) beside it; a third would only add memory and time to the two it queues behind.
 * 30 s: Prometheus' own scrape timeouts are below its intervals, 10 s by default. 120 s in all: twice
 * Prometheus' default interval (1 m), past which no scraper still waits for the answer.
 */
export const SCRAPE_LIMITS: ScrapeLimits = { maxConcurrent: 2, stallTimeoutMs: 30_000, deadlineMs: 120_000 };

/** What a 429 asks the scraper to wait, in seconds: about what a scrape of a large fleet takes. */
export const RETRY_AFTER_S = 5;

/** The text of one scrape: pieces (an empty one is only a pause), or a promise of them. */
export type ScrapeText = () => Iterable<string> | Promise<Iterable<string>>;

const nextTurn = (): Promise<void> =>
  new Promise((resolve) => {
    setImmediate(resolve);
  });

/** One response being written: whether its connection has closed, and a waiter to wake when it does. */
interface Flow {
  res: ServerResponse;
  closed: boolean;
  wake: (() => void) | null;
}

export class ScrapeStream {
  private active = 0;
  private readonly limits: ScrapeLimits;

  constructor(
    private readonly log: Logger,
    /** What is scraped, for log lines: `dcgm` or `metrics`. */
    private readonly what: string,
    limits: Partial<ScrapeLimits> = {},
  ) {
    this.limits = { ...SCRAPE_LIMITS, ...limits };
  }

  /** Scrapes being written now. */
  get inFlight(): number {
    return this.active;
  }

  /** Answers one scrape; never throws, never leaves a promise rejected. */
  serve(res: ServerResponse, contentType: string, text: ScrapeText): void {
    if (this.active >= this.limits.maxConcurrent) {
      res
        .writeHead(429, { 'content-type': 'text/plain', 'retry-after': String(RETRY_AFTER_S) })
        .end(`${String(this.active)} scrapes in progress already; retry in ${String(RETRY_AFTER_S)}s\n`);
      return;
    }
    this.active++;
    void this.run(res, contentType, text).finally(() => {
      this.active--;
    });
  }

  private async run(res: ServerResponse, contentType: string, text: ScrapeText): Promise<void> {
    const flow: Flow = { res, closed: false, wake: null };
    const onClose = (): void => {
      flow.closed = true;
      flow.wake?.();
    };
    res.once('close', onClose);
    const deadline = setTimeout(() => {
      this.log.warn(
        { scrape: this.what, deadlineMs: this.limits.deadlineMs },
        'scrape not taken whole in time; response cut',
      );
      flow.closed = true;
      flow.wake?.();
      res.destroy();
    }, this.limits.deadlineMs);
    try {
      await this.send(flow, contentType, text);
    } catch (e) {
      this.log.error({ err: e instanceof Error ? e.message : String(e), scrape: this.what }, 'scrape failed');
      // Before the head: a 500 the scraper records; after it, only a cut body tells it the text is short.
      if (res.headersSent) res.destroy();
      else res.writeHead(500, { 'content-type': 'text/plain' }).end('scrape failed\n');
    } finally {
      clearTimeout(deadline);
      res.off('close', onClose);
    }
  }

  private async send(flow: Flow, contentType: string, text: ScrapeText): Promise<void> {
    const { res } = flow;
    const pieces = (await text())[Symbol.iterator]();
    for (let p = pieces.next(); !p.done; p = pieces.next()) {
      if (flow.closed) return;
      if (!res.headersSent) res.writeHead(200, { 'content-type': contentType });
      if (p.value.length > 0 && !res.write(p.value)) await this.drained(flow);
      await nextTurn();
    }
    if (flow.closed) return;
    if (!res.headersSent) res.writeHead(200, { 'content-type': contentType });
    res.end();
  }

  /** Until the client took what was written, or left, or took nothing for the stall timeout (cut). */
  private drained(flow: Flow): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        flow.res.off('drain', done);
        flow.wake = null;
        resolve();
      };
      const timer = setTimeout(() => {
        this.log.warn(
          { scrape: this.what, stallTimeoutMs: this.limits.stallTimeoutMs },
          'scrape client took nothing in time; response cut',
        );
        flow.closed = true;
        done();
        flow.res.destroy();
      }, this.limits.stallTimeoutMs);
      flow.res.on('drain', done);
      flow.wake = done;
      if (flow.closed) done();
    });
  }
}
