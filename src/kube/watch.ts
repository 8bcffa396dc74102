import { KubeConfig } from '@kubernetes/client-node';
import { fullJitter, WATCH_BACKOFF } from './backoff.js';
import { ApiError, clientOf, type WatchSource } from './client.js';

/**
 * A watch that survives the API server ending it. The server ends watches on its own: at its request
 * timeout, on restart, and when a client reads too slowly for its watch cache (a busy process under a
 * burst of its own writes); a silent one is given up by the client (`WATCH_IDLE_MS`). Each time, this
 * resumes from the last resourceVersion seen (bookmarks included), which costs one request, where
 * watching afresh would replay every object. Only when the server can no longer resume from there
 * (410 Gone) does the caller hear of it, through `expired`, and relist; it then calls `restart` with
 * the list's resourceVersion.
 */
export interface WatchHandlers {
  /** ADDED, MODIFIED and DELETED events. */
  event(type: string, obj: unknown): void;
  /** The resourceVersion is too old to resume from: relist, then `restart(listRv)`. */
  expired(): void;
  /** A failed attempt; it is retried from the same resourceVersion after a backoff. */
  failed?(err: unknown): void;
  /** Each request that opens the watch, for request accounting. */
  opened?(): void;
}

export class ResumableWatch {
  private rv: string;
  private stopped = false;
  private abort: (() => void) | null = null;
  private timer: NodeJS.Timeout | undefined;
  /** Failed attempts since the last event, for backoff. */
  private failures = 0;
  private readonly source: WatchSource;

  constructor(
    source: KubeConfig | WatchSource,
    private readonly path: string,
    private readonly query: Record<string, string>,
    startRv: string,
    private readonly h: WatchHandlers,
    /** A media type other than full objects, e.g. `as=PartialObjectMetadata`. */
    private readonly accept = 'application/json',
    private readonly random: () => number = Math.random,
  ) {
    this.source = source instanceof KubeConfig ? clientOf(source) : source;
    this.rv = startRv;
    this.open();
  }

  /** Watch again from `rv` (a fresh list's), after `expired`. */
  restart(rv: string): void {
    this.abort?.();
    clearTimeout(this.timer);
    this.rv = rv;
    this.open();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort?.();
  }

  private open(): void {
    if (this.stopped) return;
    let gone = false;
    /** An ERROR event other than 410 (a 500, a 504): the stream then ends cleanly, but it failed. */
    let failedEvent: unknown = null;
    const attempt = { finished: false };
    this.h.opened?.();
    const abort = this.source.watch(
      this.path,
      { ...this.query, resourceVersion: this.rv, allowWatchBookmarks: 'true' },
      this.accept,
      {
        event: (type, obj) => {
          if (type === 'ERROR') {
            const code = (obj as { code?: number } | null)?.code;
            gone = code === 410;
            if (!gone)
              failedEvent = new ApiError(
                code ?? 0,
                `watch ${this.path}: ${JSON.stringify(obj).slice(0, 200)}`,
              );
            return;
          }
          const rv = (obj as { metadata?: { resourceVersion?: string } } | null)?.metadata?.resourceVersion;
          if (rv) this.rv = rv;
          this.failures = 0;
          if (type !== 'BOOKMARK') this.h.event(type, obj);
        },
        done: (ended) => {
          const err: unknown = ended ?? failedEvent;
          attempt.finished = true;
          this.abort = null;
          if (this.stopped) return;
          if (gone || (err instanceof ApiError && err.code === 410)) {
            this.h.expired();
            return;
          }
          if (err) {
            this.failures++;
            this.h.failed?.(err);
          }
          // A clean end resumes at once; a failure (server down, silent) waits, longer each time.
          const delay = err ? fullJitter(this.failures, WATCH_BACKOFF, this.random) : 0;
          this.timer = setTimeout(() => {
            this.open();
          }, delay);
        },
      },
    );
    // A source may end the watch before answering; `done` may then have opened the next one already.
    if (!attempt.finished) this.abort = abort;
  }
}
