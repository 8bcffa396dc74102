import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterApi, StoredSlice } from '../kube/api.js';
import { fullJitter, NODE_BACKOFF } from '../kube/backoff.js';
import { ApiError, type WrittenRef } from '../kube/client.js';
import { termDeadline } from '../kube/fence.js';
import { planPool, sliceName, type NodeOwner, type PoolPlan } from '../kube/publish/pool.js';
import type { SliceIndex } from './index.js';
import type { NodeSlice } from './template.js';

/** Token bucket: `take()` resolves when a request may go out. */
export class RateLimiter {
  private tokens: number;
  private last = Date.now();
  constructor(
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }
  async take(): Promise<void> {
    if (this.qps <= 0) return;
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await sleep(Math.ceil(((1 - this.tokens) / this.qps) * 1000));
    }
  }
}

export interface WorkQueueOptions {
  /** Nodes worked on at once. */
  concurrency: number;
  /** The work of one node; a rejection retries it after a backoff. */
  work(node: string): Promise<void>;
  /** Whether work may start (the fleet holds it back until its lists are in). */
  ready(): boolean;
  failed(node: string, err: unknown, retryInMs: number): void;
  /** After each pass. */
  settled(): void;
  /** Whether the node is this replica's to write (a sharded fleet's); others are dropped. Default: all. */
  mine?: ((node: string) => boolean) | undefined;
  random?: (() => number) | undefined;
}

/**
 * Nodes waiting for a reconcile, and the bounded pool of passes in flight. A node is in the queue at
 * most once, and never worked on twice at the same time: an event for a node being reconciled queues
 * it again, for a pass after the one in flight.
 */
export class WorkQueue {
  private readonly queue = new Set<string>();
  /** Passes in flight, by node, so that a shard handed over can wait for its own. */
  private readonly active = new Map<string, Promise<void>>();
  /** Failures in a row, by node, for backoff. */
  private readonly failures = new Map<string, number>();
  /** The retry timer of each node waiting out its backoff. */
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private stopped = false;

  constructor(private readonly o: WorkQueueOptions) {}

  get pending(): number {
    return this.queue.size + this.active.size;
  }

  idle(): boolean {
    return this.queue.size === 0 && this.active.size === 0;
  }

  add(node: string): void {
    // A node waiting out its backoff runs when its timer fires, not again at every event about it.
    if (this.stopped || this.retries.has(node) || !this.mine(node)) return;
    this.queue.add(node);
    this.pump();
  }

  /** Drops a queued pass (one in flight goes on). */
  remove(node: string): void {
    this.queue.delete(node);
  }

  private mine(node: string): boolean {
    return this.o.mine?.(node) ?? true;
  }

  /**
   * Nodes no longer this replica's: dropped from the queue and their retries, and resolved once their
   * passes in flight have ended (each stops at its next request, which the writer refuses).
   */
  async disown(lost: (node: string) => boolean): Promise<void> {
    for (const n of this.queue) if (lost(n)) this.queue.delete(n);
    for (const [n, t] of this.retries)
      if (lost(n)) {
        clearTimeout(t);
        this.retries.delete(n);
        this.failures.delete(n);
      }
    await Promise.all([...this.active].flatMap(([n, p]) => (lost(n) ? [p] : [])));
  }

  /**
   * Nothing queued starts after this, and nothing is retried; a pass in flight is the writer's to fence.
   * Resolves once the passes in flight have ended, so that a leader hands its Lease over only then.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.clear();
    for (const t of this.retries.values()) clearTimeout(t);
    this.retries.clear();
    await Promise.all(this.active.values());
  }

  pump(): void {
    if (this.stopped || !this.o.ready()) return;
    for (const next of this.queue) {
      if (this.active.size >= this.o.concurrency) return;
      if (this.active.has(next)) continue;
      this.queue.delete(next);
      if (!this.mine(next)) continue;
      const pass = this.run(next).finally(() => {
        this.active.delete(next);
        this.pump();
        this.o.settled();
      });
      this.active.set(next, pass);
    }
  }

  private async run(node: string): Promise<void> {
    try {
      await this.o.work(node);
      this.failures.delete(node);
    } catch (e) {
      // A pass the writer fenced off (the term ended, the shard moved) is no failure, nothing to retry;
      // nor is any failure of a node no longer this replica's.
      if (this.stopped || e instanceof Fenced || !this.mine(node)) {
        this.failures.delete(node);
        return;
      }
      const n = (this.failures.get(node) ?? 0) + 1;
      this.failures.set(node, n);
      // Drawn, not fixed: nodes that failed together (an API server restart) retry spread out.
      const delay = fullJitter(n, NODE_BACKOFF, this.o.random);
      this.o.failed(node, e, delay);
      // One retry per node: a pass that failed while one was pending replaces it.
      clearTimeout(this.retries.get(node));
      this.retries.set(
        node,
        setTimeout(() => {
          this.retries.delete(node);
          this.add(node);
        }, delay),
      );
    }
  }
}

export interface WriteCounters {
  writes: number;
  requests: number;
}

/**
 * A write not sent because the node stopped being this writer's while its pass ran: the fleet's term
 * ended, or the node's shard moved to another replica.
 */
export class Fenced extends Error {
  constructor(node: string) {
    super(`node ${node}: not written, it is no longer this fleet's to write`);
    this.name = 'Fenced';
  }
}

/**
 * Brings one node's pool of one driver to the desired slices, keeping the index in step. Each request
 * is sent only before `until(node)` (on the monotonic clock: when this writer's term or shard ends), and
 * is aborted then if still unanswered, so that nothing of this writer reaches the server after the
 * next may have begun (the lease margin lies between). Each replace or delete names the resourceVersion
 * last seen and each create a name of its own (`sliceName`), so a write the server still receives late
 * is refused (409) instead of applied or doubling a pool.
 */
export class SliceWriter {
  constructor(
    private readonly api: ClusterApi,
    private readonly index: SliceIndex,
    private readonly limiter: RateLimiter,
    private readonly stats: WriteCounters,
    private readonly until: (node: string) => number = () => Infinity,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Waits its turn, then checks the term again (the wait can outlast it): the milliseconds left to it,
   * the next request's deadline; undefined, the client's own.
   */
  private async turn(node: string): Promise<number | undefined> {
    await this.limiter.take();
    const deadline = termDeadline(this.until(node), this.now());
    if (deadline === null) throw new Fenced(node);
    this.stats.requests++;
    return deadline;
  }

  /** The node's slices as stored, read in its turn like any write: a shard taken over reads each of its nodes. */
  async slicesOf(node: string): Promise<StoredSlice[]> {
    await this.turn(node);
    return (await this.api.listSlices({ fieldSelector: `spec.nodeName=${node}` })).items;
  }

  async reconcile(node: string, uid: string, driver: string, want: NodeSlice[]): Promise<void> {
    const plan = planPool(this.index.of(node, driver), want, driver, node);
    if (!plan) return;
    const owner: NodeOwner = { apiVersion: 'v1', kind: 'Node', name: node, uid, controller: true };
    for (const [place, w] of plan.writes.entries()) {
      const deadline = await this.turn(node);
      let ref: WrittenRef;
      try {
        ref = await this.write(w, place, plan.generation, owner, deadline);
      } catch (e) {
        // Replaced a slice that is gone: forget it, or every pass would plan the same replace again.
        if (w.existing && e instanceof ApiError && e.code === 404) this.index.forget(w.existing.name);
        throw e;
      }
      // The API server stores the spec as sent (the restart test holds it to that), so its key is known.
      this.index.record(ref.name, {
        node,
        driver,
        key: w.desired.key,
        generation: plan.generation,
        rv: ref.resourceVersion,
      });
      this.stats.writes++;
    }
    for (const name of plan.deletes) await this.delete(node, name);
  }

  /** Creates or replaces one slice from the template's text; a replace only of the version last seen. */
  private write(
    w: PoolPlan<NodeSlice>['writes'][number],
    place: number,
    generation: number,
    owner: NodeOwner,
    deadline: number | undefined,
  ): Promise<WrittenRef> {
    const { desired: d, existing } = w;
    const rv = existing ? this.index.get(existing.name)?.rv : undefined;
    const metadata = existing
      ? { name: existing.name, ownerReferences: [owner], ...(rv ? { resourceVersion: rv } : {}) }
      : { name: sliceName(d.generateName, owner.uid, place), ownerReferences: [owner] };
    const body = `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":${JSON.stringify(metadata)},"spec":${d.spec(generation)}}`;
    return existing
      ? this.api.replaceSlice(existing.name, body, deadline)
      : this.api.createSlice(body, deadline);
  }

  /**
   * The slice stays in the index until the API server confirms it gone, so that a failed delete is
   * planned again by the node's next pass.
   */
  private async delete(node: string, name: string): Promise<void> {
    const deadline = await this.turn(node);
    try {
      await this.api.deleteSlice(name, this.index.get(name)?.rv, deadline);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 404)) throw e;
    }
    this.index.forget(name);
    this.stats.writes++;
  }
}
