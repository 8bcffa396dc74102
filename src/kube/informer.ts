import type { Logger } from 'pino';
import { fullJitter, WATCH_BACKOFF } from './backoff.js';
import { ApiClient } from './client.js';
import { listPage } from './api.js';
import { ResumableWatch } from './watch.js';

/**
 * One collection kept in memory by a list and a resumable watch (relisting when the watch expires),
 * each object reduced on arrival to what the caller needs (`project`; null: not kept). For the small
 * controllers that would otherwise list a whole collection every second: a fleet's claims, its daemon
 * pods. `snapshot()` is undefined until the first list is in.
 */
export class Informer<T> {
  private items = new Map<string, T>();
  private watch: ResumableWatch | null = null;
  private synced = false;
  private stopped = false;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly http: ApiClient,
    private readonly path: string,
    private readonly query: Record<string, string>,
    private readonly project: (obj: unknown) => T | null,
    private readonly log: Logger,
  ) {}

  start(): void {
    void this.relist();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.watch?.stop();
  }

  snapshot(): T[] | undefined {
    return this.synced ? [...this.items.values()] : undefined;
  }

  private key(obj: unknown): string {
    const m = (obj as { metadata?: { namespace?: string; name?: string } } | null)?.metadata;
    return `${m?.namespace ?? ''}/${m?.name ?? ''}`;
  }

  private put(obj: unknown): void {
    const v = this.project(obj);
    if (v === null) this.items.delete(this.key(obj));
    else this.items.set(this.key(obj), v);
  }

  private async relist(): Promise<void> {
    try {
      const items = new Map<string, T>();
      let cont: string | undefined;
      let rv = '';
      do {
        const page = await listPage<unknown>(
          this.http,
          this.path,
          {
            labelSelector: this.query['labelSelector'],
            fieldSelector: this.query['fieldSelector'],
            limit: 500,
            continue: cont,
          },
          'application/json',
        );
        for (const o of page.items) {
          const v = this.project(o);
          if (v !== null) items.set(this.key(o), v);
        }
        cont = page.continue;
        rv = page.resourceVersion;
      } while (cont);
      if (this.stopped) return;
      this.items = items;
      this.synced = true;
      this.failures = 0;
      if (this.watch) this.watch.restart(rv);
      else
        this.watch = new ResumableWatch(this.http, this.path, this.query, rv, {
          event: (type, obj) => {
            if (type === 'DELETED') this.items.delete(this.key(obj));
            else this.put(obj);
          },
          expired: () => {
            void this.relist();
          },
        });
    } catch (e) {
      this.failures++;
      const ms = fullJitter(this.failures, WATCH_BACKOFF);
      this.log.warn(
        { path: this.path, err: e instanceof Error ? e.message : String(e), retryInMs: ms },
        'list failed',
      );
      this.timer = setTimeout(() => void this.relist(), ms);
    }
  }
}
