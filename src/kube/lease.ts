import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ApiError } from './client.js';
import type { ObjectApi } from './objects.js';

/**
 * Leader election over a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection` does it (the
 * client library here has none): replicas of one writer (the fleet, the ComputeDomain controller) race
 * for the Lease, one holds it and works, the others stand by reading it every retry period.
 *
 * Why two writers never overlap: a standby takes the Lease only once its record has not changed for
 * `leaseDurationMs` as measured on its own clock from when it saw the change, and the holder stops
 * working as soon as `renewDeadlineMs` has passed since it sent its last successful renew, which is
 * before the server stored it and so before any standby saw it: the leader stops at least
 * `leaseDuration - renewDeadline` (5 s) before anyone may start. The deadline runs on a timer of its
 * own, so a renew request hanging in a partition cannot hold the leader past it. Every write names
 * the resourceVersion it read: of two racing candidates one gets 409 and stays a standby. On a clean
 * stop the holder empties `holderIdentity`, so its successor need not wait out the duration.
 */

export const LEASE_DURATION_MS = 15_000;
export const RENEW_DEADLINE_MS = 10_000;
export const RETRY_PERIOD_MS = 2_000;

export const leasePath = (namespace: string, name: string): string =>
  `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`;

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    /** Each entry's `time` is the API server's clock at the last write that changed its fields. */
    managedFields?: { time?: string }[];
  };
  spec?: LeaseSpec;
}

/** What the leader does while it leads; stopped when it stops leading. */
export interface Work {
  stop(): Promise<void>;
}

export interface ElectionOptions {
  api: ObjectApi;
  namespace: string;
  name: string;
  /** Unique per process: two replicas of one identity would both believe they lead. */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /**
   * Asked before taking the Lease (not before renewing it): false while another kind of writer of the
   * same objects still works (the fleet's shards, `kube/sharding`), so that a rollout from one to the
   * other never has both writing.
   */
  mayAcquire?: (() => Promise<boolean>) | undefined;
}

export interface ElectedOptions {
  /** Absent: no election, the work starts at once and runs until stopped. */
  election?: ElectionOptions | undefined;
  /** Starts the work; it must return promptly (a first list that waits for the API server runs on behind it). */
  lead: () => Work;
  log: Logger;
  /** A monotonic clock in ms; tests leave it. */
  now?: () => number;
}

/** The pod's name (its hostname) and a random suffix: a restarted container is a new candidate. */
export function leaseIdentity(): string {
  return `${hostname()}_${randomBytes(4).toString('hex')}`;
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits, as the API server parses it. */
export function microTime(): string {
  return new Date().toISOString().replace(/Z$/, '000Z');
}

const recordKey = (s: LeaseSpec | undefined): string =>
  JSON.stringify([
    s?.holderIdentity ?? '',
    s?.renewTime ?? '',
    s?.acquireTime ?? '',
    s?.leaseTransitions ?? 0,
  ]);

/** Rejects after `ms`: an attempt never outlives the deadline it is trying to meet. */
export async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  const ac = new AbortController();
  try {
    return await Promise.race([
      p,
      sleep(ms, undefined, { signal: ac.signal }).then(() => {
        throw new Error(`no answer within ${String(ms)} ms`);
      }),
    ]);
  } finally {
    ac.abort();
  }
}

export class Elected {
  private work: Work | null = null;
  private stopped = false;
  private readonly wake = new AbortController();
  private loop: Promise<void> = Promise.resolve();
  /** The last record seen and when (our clock): a holder is live until leaseDuration after a change. */
  private observed = '';
  private observedAt = 0;
  /** When the last attempt to acquire or renew began (our clock). */
  private lastAttempt = 0;
  private deadline: NodeJS.Timeout | undefined;
  /**
   * A term's end under way (its work stopping, its writes in flight draining): a stop that comes
   * meanwhile waits for it, and no new term begins before it.
   */
  private ending: Promise<void> | null = null;
  /** `renewDeadline` after the last successful renew was sent: the term's end unless renewed. */
  private until = 0;
  private readonly now: () => number;
  private readonly durationMs: number;
  private readonly renewMs: number;
  private readonly retryMs: number;
  /** An attempt has been answered: the lease was ours, or another's. */
  private answered = false;
  /** Times this process has started leading; tests read it. */
  terms = 0;

  constructor(private readonly o: ElectedOptions) {
    this.now = o.now ?? (() => performance.now());
    this.durationMs = o.election?.leaseDurationMs ?? LEASE_DURATION_MS;
    this.renewMs = o.election?.renewDeadlineMs ?? RENEW_DEADLINE_MS;
    this.retryMs = o.election?.retryPeriodMs ?? RETRY_PERIOD_MS;
  }

  /**
   * Until when (on the `now` clock) this term may write, unless renewed: `renewDeadline` after the last
   * successful renew was sent; 0 while it does not lead; Infinity without election. A writer checks it
   * at each write and gives each request no longer than what is left, so that nothing it sends lands
   * after a standby may have begun (`leaseDuration - renewDeadline` later at the earliest).
   */
  leadingUntil(): number {
    if (!this.work) return 0;
    return this.o.election ? this.until : Infinity;
  }

  /** Whether this process works now (always, without election). */
  get leading(): boolean {
    return this.work !== null;
  }

  /**
   * Whether it knows if it leads or stands by: without election at once, else once the API server has
   * answered an attempt. Before that it is neither, and a readiness that calls a standby ready must not
   * call it so.
   */
  get decided(): boolean {
    return !this.o.election || this.answered;
  }

  start(): void {
    const e = this.o.election;
    if (!e) {
      this.begin();
      return;
    }
    this.o.log.info({ lease: `${e.namespace}/${e.name}`, identity: e.identity }, 'standing by for the lease');
    this.loop = this.run(e);
  }

  /** Stops the work, then hands the lease back so that a standby leads at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake.abort();
    // A term already fenced (its last renew went unanswered) is not handed back: the server is not
    // answering, and a release would only spend the stop's bound; its successor waits out the lease.
    const held = this.work !== null;
    await this.end('stopping');
    const e = this.o.election;
    if (e && held) await this.release(e);
  }

  private begin(): void {
    this.terms++;
    this.work = this.o.lead();
  }

  /**
   * Ends the term, once: a second caller (a stop after the fence fell) waits for the same end, so that a
   * process never leaves while the term's writes are still draining, nor without its last line.
   */
  private end(why: string): Promise<void> {
    clearTimeout(this.deadline);
    if (this.ending) return this.ending;
    const w = this.work;
    if (!w) return Promise.resolve();
    this.work = null;
    this.ending = this.finish(w, why).finally(() => {
      this.ending = null;
    });
    return this.ending;
  }

  private async finish(w: Work, why: string): Promise<void> {
    try {
      await w.stop();
    } catch (err) {
      this.o.log.error({ err: err instanceof Error ? err.message : String(err) }, 'stopping the work failed');
    }
    // Once the work's writes have ended: the chaos suites read each term's end from this line.
    if (this.o.election) this.o.log.warn({ why }, 'stopped leading');
  }

  /** Armed after each renew: past it the work stops, whatever the request in flight may still bring. */
  private arm(sentAt: number): void {
    clearTimeout(this.deadline);
    this.until = sentAt + this.renewMs;
    this.deadline = setTimeout(
      () => {
        void this.end(`lease not renewed within ${String(this.renewMs)} ms`);
      },
      Math.max(0, sentAt + this.renewMs - this.now()),
    );
  }

  private async run(e: ElectionOptions): Promise<void> {
    while (!this.stopped) {
      const sentAt = this.now();
      this.lastAttempt = sentAt;
      let held = false;
      try {
        held = await within(this.renewMs, this.tryAcquireOrRenew(e, sentAt));
        this.answered = true;
      } catch (err) {
        this.o.log.warn(
          { lease: `${e.namespace}/${e.name}`, err: err instanceof Error ? err.message : String(err) },
          'lease not acquired or renewed; retrying',
        );
      }
      // stop() may have run while the request was out.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
      if (this.stopped) return;
      // A success that comes back after the deadline counts as none: the work may already have stopped.
      if (held && this.now() - sentAt < this.renewMs) {
        this.arm(sentAt);
        if (!this.work && !this.ending && (await this.stillMay(e, sentAt))) {
          this.o.log.info({ lease: `${e.namespace}/${e.name}`, identity: e.identity }, 'leading');
          this.begin();
        }
      } else if (this.work && this.lostTo(e)) {
        await this.end('the lease is held by another');
      }
      try {
        await sleep(this.pause(), undefined, { signal: this.wake.signal });
      } catch {
        return;
      }
    }
  }

  /**
   * Asked again once the Lease is ours, before any work: another kind of writer (the shard ring) that
   * checked for us just before we took it may have begun. It yields when it sees our Lease held (it
   * checks after each take), so only here can both have looked away at once; until it has yielded we
   * hold the Lease and do nothing.
   */
  private async stillMay(e: ElectionOptions, sentAt: number): Promise<boolean> {
    if (!e.mayAcquire) return true;
    let may = false;
    try {
      may = await within(this.renewMs, e.mayAcquire());
    } catch (err) {
      this.o.log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'lease held; not leading yet',
      );
    }
    return may && !this.stopped && this.now() - sentAt < this.renewMs;
  }

  /**
   * The retry period, except that a standby wakes just after the holder's lease runs out rather than at
   * the next period: a dead leader is then replaced one lease duration after the standby saw its last
   * renew, not up to a retry period later.
   */
  private pause(): number {
    if (this.work || this.observed === '') return this.retryMs;
    const expiry = this.observedAt + this.durationMs;
    const left = expiry - this.now();
    // Expired already (a loaded machine's timer came late) and not tried since: try now.
    if (left <= 0 && this.lastAttempt < expiry) return 0;
    return left > 0 && left < this.retryMs ? left + 1 : this.retryMs;
  }

  /** Whether the last record seen names another holder (then stop now, not at the deadline). */
  private lostTo(e: ElectionOptions): boolean {
    const holder = (JSON.parse(this.observed || '[""]') as string[])[0] ?? '';
    return holder !== '' && holder !== e.identity;
  }

  private async tryAcquireOrRenew(e: ElectionOptions, at: number): Promise<boolean> {
    const path = leasePath(e.namespace, e.name);
    const cur = await e.api.get<Lease>(path);
    const time = microTime();
    const seconds = Math.ceil(this.durationMs / 1000);
    if (!cur) {
      if (e.mayAcquire && !(await e.mayAcquire())) return false;
      const spec: LeaseSpec = {
        holderIdentity: e.identity,
        leaseDurationSeconds: seconds,
        acquireTime: time,
        renewTime: time,
        leaseTransitions: 0,
      };
      const ok = await conflictFree(() =>
        e.api.create(path.slice(0, path.lastIndexOf('/')), {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: e.name, namespace: e.namespace },
          spec,
        }),
      );
      if (ok) this.see(spec, at);
      return ok;
    }
    const key = recordKey(cur.spec);
    // Dated from the answer, not the request: the holder may have renewed while a slow GET was out,
    // and it works until renewDeadline after it sent that renew, which can be as late as now.
    if (key !== this.observed) this.see(cur.spec, this.now());
    const holder = cur.spec?.holderIdentity ?? '';
    if (holder !== '' && holder !== e.identity && this.now() < this.observedAt + this.durationMs)
      return false;
    const mine = holder === e.identity;
    if (!mine && e.mayAcquire && !(await e.mayAcquire())) return false;
    const spec: LeaseSpec = {
      ...cur.spec,
      holderIdentity: e.identity,
      leaseDurationSeconds: seconds,
      renewTime: time,
      acquireTime: mine ? (cur.spec?.acquireTime ?? time) : time,
      leaseTransitions: (cur.spec?.leaseTransitions ?? 0) + (mine || holder === '' ? 0 : 1),
    };
    const ok = await conflictFree(() => e.api.replace(path, { ...cur, spec }));
    if (ok) this.see(spec, at);
    return ok;
  }

  private see(spec: LeaseSpec | undefined, at: number): void {
    this.observed = recordKey(spec);
    this.observedAt = at;
  }

  /** client-go's release: the holder emptied, so that the next candidate need not wait. */
  private async release(e: ElectionOptions): Promise<void> {
    const path = leasePath(e.namespace, e.name);
    try {
      await within(
        this.renewMs,
        this.loop.catch(() => undefined),
      );
      const cur = await within(this.renewMs, e.api.get<Lease>(path));
      if (cur?.spec?.holderIdentity !== e.identity) return;
      const time = microTime();
      await within(
        this.renewMs,
        e.api.replace(path, {
          ...cur,
          spec: {
            ...cur.spec,
            holderIdentity: '',
            leaseDurationSeconds: 1,
            renewTime: time,
            acquireTime: time,
          },
        }),
      );
      this.o.log.info({ lease: `${e.namespace}/${e.name}` }, 'released the lease');
    } catch (err) {
      // The successor then waits out the lease duration: slower, never unsafe.
      this.o.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'lease not released');
    }
  }
}

/** False on 409: another candidate wrote first; the next attempt reads its record. */
export async function conflictFree(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.code === 409) return false;
    throw err;
  }
}
