import type { Logger } from 'pino';
import type { ListQuery, Page } from './api.js';
import { fullJitter, WATCH_BACKOFF } from './backoff.js';
import type { WatchSource } from './client.js';
import { ResumableWatch } from './watch.js';

/** One collection a `ListWatch` keeps: listed page by page, then watched from the list's resourceVersion. */
export interface Collection {
  path: string;
  /** The same selectors go on the list and on the watch, so the watch sees exactly what was listed. */
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** One page of the list: the caller's adapter (request accounting, a media type, a fake in tests). */
  list(q: ListQuery): Promise<Page<unknown>>;
  /** The watch's media type (metadata only, say); full objects by default. */
  accept?: string;
  /** Each page's items as they arrive: a list is taken in by page, never held whole. */
  page(items: unknown[]): void;
  /** ADDED, MODIFIED and DELETED events after the list. */
  event(type: string, obj: unknown): void;
  /** This collection's list is whole, before the others' may be (their `listed()` comes after all). */
  listed?(): void;
}

export interface ListWatchOptions {
  source: WatchSource;
  collections: Collection[];
  log: Logger;
  /** Names the collections in log lines. */
  what: string;
  /** A list is starting: the pages that follow replace what the last one gave. */
  listing?(): void;
  /** Every collection's list is in, the first time and after each relist; a throw counts as a failed list. */
  listed(): void | Promise<void>;
  /**
   * A failed list (the `failures`th in a row): how long to wait before the next, where the caller knows
   * better than the backoff (a CRD not installed yet is looked for slowly, and said so once); undefined:
   * the backoff, and a warning.
   */
  listFailed?(err: unknown, failures: number): number | undefined;
  /** A failed watch attempt: 'relist' when the resource itself went away (404); otherwise it resumes. */
  watchFailed?(err: unknown): 'relist' | undefined;
  /** Each request that opens a watch, for request accounting. */
  opened?(): void;
  random?: () => number;
}

const PAGE = 500;
const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * List, then watch from the list's resourceVersion; when the server can no longer resume a watch (410
 * Gone), list every collection again and resume all the watches from the new lists; a failed list is
 * retried after a full-jitter backoff. Written once for every cache of the cluster (the informers, the
 * GpuFault watcher, the fleet's nodes and slices), so that each relists, backs off and recovers alike.
 * Several collections relist together because their callers judge one against another (a node against
 * its slices): a slice cache refilled while the node cache is stale would get slices written twice.
 */
export class ListWatch {
  private readonly watches: (ResumableWatch | null)[];
  private rvs: string[] = [];
  private relisting = false;
  /** Pages of a list that was given up (failed, or overtaken) are dropped by generation. */
  private generation = 0;
  private failures = 0;
  /** Relists because a watch said its resource is gone, since a watch last brought an event. */
  private goneRelists = 0;
  private stopped = false;
  private started: Promise<void> | null = null;
  private firstListed: () => void = () => undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly random: () => number;

  constructor(private readonly o: ListWatchOptions) {
    this.watches = o.collections.map(() => null);
    this.random = o.random ?? Math.random;
  }

  /** Lists, then watches; resolves once the first list is in (or on stop), retrying until then. */
  start(): Promise<void> {
    this.started ??= new Promise<void>((resolve) => {
      if (this.stopped) {
        resolve();
        return;
      }
      this.firstListed = resolve;
      this.relist();
    });
    return this.started;
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
    clearTimeout(this.timer);
    for (const w of this.watches) w?.stop();
    this.firstListed();
  }

  /** One relist at a time: several watches can expire together (etcd compacted past them all). */
  private relist(): void {
    if (this.stopped || this.relisting) return;
    this.relisting = true;
    clearTimeout(this.timer);
    const gen = ++this.generation;
    this.listAll(gen).then(
      () => {
        this.relisting = false;
        if (gen !== this.generation) return;
        this.failures = 0;
        this.watchAll();
        this.firstListed();
      },
      (e: unknown) => {
        this.relisting = false;
        // The other collections' lists go on paging otherwise, into what the next list replaces.
        this.generation++;
        if (this.stopped) return;
        // A delay the caller chose (a CRD not installed) is no failure of the server's to back off from.
        let delay = this.o.listFailed?.(e, this.failures + 1);
        if (delay === undefined) {
          this.failures++;
          delay = fullJitter(this.failures - 1, WATCH_BACKOFF, this.random);
          this.o.log.warn(
            { what: this.o.what, err: message(e), retryInMs: delay },
            `listing ${this.o.what} failed; retrying`,
          );
        }
        this.timer = setTimeout(() => {
          this.relist();
        }, delay);
      },
    );
  }

  private async listAll(gen: number): Promise<void> {
    this.o.listing?.();
    // Every collection at once; each is taken in by page as it comes.
    this.rvs = await Promise.all(this.o.collections.map((c) => this.listOne(c, gen)));
    if (gen !== this.generation) return;
    await this.o.listed();
  }

  private async listOne(c: Collection, gen: number): Promise<string> {
    let rv = '';
    let cont: string | undefined;
    do {
      const page = await c.list({
        labelSelector: c.labelSelector,
        fieldSelector: c.fieldSelector,
        limit: PAGE,
        continue: cont,
      });
      if (gen !== this.generation) return rv;
      c.page(page.items);
      rv = page.resourceVersion;
      cont = page.continue;
    } while (cont !== undefined);
    c.listed?.();
    return rv;
  }

  private watchAll(): void {
    for (const [i, c] of this.o.collections.entries()) {
      const rv = this.rvs[i] ?? '';
      const w = this.watches[i];
      if (w) w.restart(rv);
      else this.watches[i] = this.watchOf(i, c, rv);
    }
  }

  private watchOf(i: number, c: Collection, rv: string): ResumableWatch {
    const query: Record<string, string> = {};
    if (c.labelSelector) query['labelSelector'] = c.labelSelector;
    if (c.fieldSelector) query['fieldSelector'] = c.fieldSelector;
    return new ResumableWatch(
      this.o.source,
      c.path,
      query,
      rv,
      {
        event: (type, obj) => {
          this.goneRelists = 0;
          c.event(type, obj);
        },
        opened: () => this.o.opened?.(),
        expired: () => {
          this.o.log.info({ path: c.path }, 'watch expired; relisting');
          this.relist();
        },
        failed: (err) => {
          if (this.o.watchFailed?.(err) === 'relist') {
            this.watches[i]?.stop();
            this.watches[i] = null;
            // Listed fine, gone to the watch: without a wait the two would alternate as fast as they answer.
            clearTimeout(this.timer);
            this.timer = setTimeout(
              () => {
                this.relist();
              },
              fullJitter(this.goneRelists++, WATCH_BACKOFF, this.random),
            );
            return;
          }
          this.o.log.warn({ path: c.path, err: message(err) }, 'watch failed; resuming');
        },
      },
      c.accept,
      this.random,
    );
  }
}
