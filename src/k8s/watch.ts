import { type KubeConfig, Watch } from '@kubernetes/client-node';

/**
 * A watch that survives the API server ending it. The server ends watches on its own: at its request
 * timeout, on restart, and when a client reads too slowly for its watch cache (a busy process under a
 * burst of its own writes). Each time, this resumes from the last resourceVersion seen (bookmarks
 * included), which costs one request, where watching afresh would replay every object. Only when the
 * server can no longer resume from there (410 Gone) does the caller hear of it, through `expired`,
 * and relist; it then calls `restart` with the list's resourceVersion.
 */
export interface WatchHandlers {
  /** ADDED, MODIFIED and DELETED events. */
  event(type: string, obj: unknown): void;
  /** The resourceVersion is too old to resume from: relist, then `restart(listRv)`. */
  expired(): void;
  /** A failed attempt; it is retried from the same resourceVersion. */
  failed?(err: unknown): void;
  /** Each request that opens the watch, for request accounting. */
  opened?(): void;
}

export class ResumableWatch {
  private rv: string;
  private stopped = false;
  private abort: (() => void) | null = null;
  private retryMs = 1000;

  constructor(
    private readonly kc: KubeConfig,
    private readonly path: string,
    private readonly query: Record<string, string>,
    startRv: string,
    private readonly h: WatchHandlers,
    /** A media type other than full objects, e.g. `as=PartialObjectMetadata`. */
    private readonly accept?: string,
  ) {
    this.rv = startRv;
    void this.open();
  }

  /** Watch again from `rv` (a fresh list's), after `expired`. */
  restart(rv: string): void {
    this.abort?.();
    this.rv = rv;
    void this.open();
  }

  stop(): void {
    this.stopped = true;
    this.abort?.();
  }

  /** A read TypeScript cannot see change across an await. */
  private isStopped(): boolean {
    return this.stopped;
  }

  private async open(): Promise<void> {
    if (this.stopped) return;
    let gone = false;
    let mine = true;
    const retry = (err: unknown): void => {
      if (!mine || this.stopped) return;
      mine = false;
      const expired = gone || (err as { statusCode?: number } | null)?.statusCode === 410;
      if (expired) {
        this.h.expired();
        return;
      }
      if (err) this.h.failed?.(err);
      // A clean end resumes at once; a failure (server down) waits, longer each time.
      const delay = err ? this.retryMs : 0;
      if (err) this.retryMs = Math.min(30_000, this.retryMs * 2);
      setTimeout(() => void this.open(), delay);
    };
    try {
      this.h.opened?.();
      const req = await new Watch(this.accept ? withAccept(this.kc, this.accept) : this.kc).watch(
        this.path,
        { ...this.query, resourceVersion: this.rv, allowWatchBookmarks: 'true' },
        (type, obj) => {
          if (type === 'ERROR') {
            gone = (obj as { code?: number } | null)?.code === 410;
            return;
          }
          const rv = (obj as { metadata?: { resourceVersion?: string } } | null)?.metadata?.resourceVersion;
          if (rv) this.rv = rv;
          this.retryMs = 1000;
          if (type !== 'BOOKMARK') this.h.event(type, obj);
        },
        retry,
      );
      this.abort = () => {
        mine = false;
        req.abort();
      };
      if (this.isStopped()) req.abort();
    } catch (e) {
      retry(e);
    }
  }
}

/** The kubeconfig as client-node's Watch sees it, asking for `accept` (its only way in is the headers). */
function withAccept(kc: KubeConfig, accept: string): KubeConfig {
  const view = Object.create(kc) as KubeConfig;
  view.applyToFetchOptions = (o) =>
    kc.applyToFetchOptions({
      ...o,
      headers: { ...(o.headers as Record<string, string> | undefined), accept },
    });
  return view;
}
