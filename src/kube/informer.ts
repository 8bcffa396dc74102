import type { Logger } from 'pino';
import { ApiClient } from './client.js';
import { listPage } from './api.js';
import { ListWatch } from './list-watch.js';

/**
 * One collection kept in memory by a `ListWatch`, each object reduced on arrival to what the caller
 * needs (`project`; null: not kept). For the small controllers that would otherwise list a whole
 * collection every second: a fleet's claims, its daemon pods. `snapshot()` is undefined until the first
 * list is in.
 */
export class Informer<T> {
  private items = new Map<string, T>();
  /** What the list under way has given so far; it replaces `items` once the list is whole. */
  private next = new Map<string, T>();
  private synced = false;
  private readonly lw: ListWatch;

  constructor(
    http: ApiClient,
    path: string,
    query: { labelSelector?: string; fieldSelector?: string },
    private readonly project: (obj: unknown) => T | null,
    log: Logger,
  ) {
    this.lw = new ListWatch({
      source: http,
      what: path,
      log,
      collections: [
        {
          path,
          labelSelector: query.labelSelector,
          fieldSelector: query.fieldSelector,
          list: (q) => listPage<unknown>(http, path, q, 'application/json'),
          page: (objs) => {
            for (const o of objs) this.put(this.next, o);
          },
          event: (type, obj) => {
            if (type === 'DELETED') this.items.delete(keyOf(obj));
            else this.put(this.items, obj);
          },
        },
      ],
      listing: () => {
        this.next = new Map();
      },
      listed: () => {
        this.items = this.next;
        this.next = new Map();
        this.synced = true;
      },
    });
  }

  private started: Promise<void> | null = null;

  start(): void {
    this.started ??= this.lw.start().catch(() => undefined);
  }

  /** Settles once the first list is in (or the list-watch stopped before it was); start() first. */
  listed(): Promise<void> {
    return this.started ?? Promise.resolve();
  }

  stop(): void {
    this.lw.stop();
  }

  /** The first list is in: what snapshot() tells, without copying 400,000 claims to tell it. */
  isSynced(): boolean {
    return this.synced;
  }

  snapshot(): T[] | undefined {
    return this.synced ? [...this.items.values()] : undefined;
  }

  private put(into: Map<string, T>, obj: unknown): void {
    const v = this.project(obj);
    if (v === null) into.delete(keyOf(obj));
    else into.set(keyOf(obj), v);
  }
}

function keyOf(obj: unknown): string {
  const m = (obj as { metadata?: { namespace?: string; name?: string } } | null)?.metadata;
  return `${m?.namespace ?? ''}/${m?.name ?? ''}`;
}
