import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ApiError } from '../client.js';
import {
  conflictFree,
  LEASE_DURATION_MS,
  leasePath,
  microTime,
  RENEW_DEADLINE_MS,
  RETRY_PERIOD_MS,
  within,
  type Lease,
  type LeaseSpec,
} from '../lease.js';
import type { ObjectApi } from '../objects.js';
import { planShards, takeInTurn, type ShardView } from './ring.js';
import { leaderLive, Liveness, record, ROLE_LABEL, SHARDED_BY_LABEL } from './exclusion.js';

/**
 * A controller split between replicas through `coordination.k8s.io` Leases, with no leader: each replica
 * renews a member Lease of its own (its heartbeat), and each of the fixed shards has a Lease naming its
 * holder, written only when the shard changes hands (`ring.ts` decides which).
 *
 * Why a shard never has two writers — client-go's election argument, with the member Lease as the
 * heartbeat of every shard its holder names:
 * - a member writes a shard's keys only while it holds the shard and only until `renewDeadline` after
 *   it *sent* its last successful renew (`owns()` checks the clock at every write; a timer then fences
 *   everything and waits for the writes in flight to end);
 * - another member takes a shard only from a holder whose member Lease it has seen unchanged (or
 *   absent) for `leaseDuration` on its own clock, by a conditional write of the shard's Lease, so the
 *   holder stopped at least `leaseDuration - renewDeadline` (5 s) earlier; or from a holder that handed
 *   it back after its writes ended;
 * - a member fenced off never resumes under its identity (a renew that came late might otherwise make
 *   it believe it still holds what another has taken): it rejoins as a new member, a stranger to its
 *   old shards.
 * The slices' own writes name the resourceVersion last seen, so one that reaches the server late is
 * refused (`fleet/reconciler.ts`).
 */

export { SHARDED_BY_LABEL } from './exclusion.js';
/** A dead member's Lease is deleted once unchanged this many lease durations, so restarts leave nothing. */
const PRUNE_AFTER_DURATIONS = 4;

export interface ShardedOptions {
  api: ObjectApi;
  namespace: string;
  /** Leases `<name>-member-<n>` and `<name>-shard-<k>`, labelled `fakegpu.dev/sharded-by=<name>`. */
  name: string;
  shards: number;
  /** A new identity, each time this process joins (again). */
  identity: () => string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  /** A monotonic clock in ms; tests leave it. */
  now?: () => number;
  /** A shard became ours: its keys may be written from now on. Returns promptly. */
  gained(shard: number): void;
  /** A shard is no longer ours (`owns` already says so): resolves once nothing more goes out for it. */
  lost(shard: number): Promise<void>;
  /** The single leader's Lease of the same objects (`<name>` itself): no shard is taken while it is held. */
  exclusive?: boolean | undefined;
}

/** What a replica sees of the ring, for its metrics and readiness. */
export interface RingState {
  identity: string;
  held: number;
  members: number;
  /** Shards held by a live member, in the last list. */
  covered: number;
}

export class Sharder {
  private id: string;
  /** Bumped when this process rejoins: a step begun under an old identity applies nothing. */
  private generation = 0;
  private memberRv: string | null = null;
  private joinedAt = 0;
  private readonly held = new Set<number>();
  /** Shards being handed back: their writes are ending, their Leases not yet released. */
  private readonly releasing = new Set<number>();
  /** Hand-backs and drains under way, off the loop; `stop()` waits for them. */
  private readonly pending = new Set<Promise<void>>();
  private fencedAt = 0;
  private fence: NodeJS.Timeout | undefined;
  /** Each member's record as last seen, and when it changed (our clock). */
  private readonly seen: Liveness;
  private stopped = false;
  private readonly wake = new AbortController();
  private loop: Promise<void> = Promise.resolve();
  private readonly now: () => number;
  private readonly durationMs: number;
  private readonly renewMs: number;
  private readonly retryMs: number;
  private last: RingState;
  private readonly leader: (() => Promise<boolean>) | null;

  constructor(private readonly o: ShardedOptions) {
    this.now = o.now ?? (() => performance.now());
    this.durationMs = o.leaseDurationMs ?? LEASE_DURATION_MS;
    this.renewMs = o.renewDeadlineMs ?? RENEW_DEADLINE_MS;
    this.retryMs = o.retryPeriodMs ?? RETRY_PERIOD_MS;
    this.seen = new Liveness(this.durationMs, this.now);
    this.id = o.identity();
    this.last = { identity: this.id, held: 0, members: 0, covered: 0 };
    this.leader = o.exclusive
      ? leaderLive(o.api, o.namespace, o.name, new Liveness(this.durationMs, this.now))
      : null;
  }

  /** Whether this replica may write the keys of `shard` now. */
  owns(shard: number): boolean {
    return this.held.has(shard) && this.now() < this.fencedAt;
  }

  /** Until when (monotonic ms) the keys of `shard` may be written, unless renewed: 0 when not held. */
  heldUntil(shard: number): number {
    return this.held.has(shard) ? this.fencedAt : 0;
  }

  /** The shards this replica holds now. */
  heldShards(): number[] {
    return this.now() < this.fencedAt ? [...this.held].sort((a, b) => a - b) : [];
  }

  state(): RingState {
    return { ...this.last, identity: this.id, held: this.held.size };
  }

  start(): void {
    this.o.log.info(
      { shards: this.o.shards, lease: `${this.o.namespace}/${this.o.name}`, identity: this.id },
      'joining the shards',
    );
    this.loop = this.run();
  }

  /** Stops writing every shard, hands each back and leaves, so that the others take them at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake.abort();
    await this.loop;
    await Promise.all([...this.pending]);
    clearTimeout(this.fence);
    const mine = [...this.held];
    await this.loseAll('stopping');
    const leases = await within(this.renewMs, this.list()).catch(() => [] as Lease[]);
    for (const k of mine) {
      const l = leases.find((x) => x.metadata.name === this.shardName(k));
      if (l) await this.handBack(k, l).catch(() => undefined);
    }
    if (this.memberRv !== null)
      await within(this.renewMs, this.o.api.delete(this.memberPath(this.id))).catch(() => undefined);
    this.o.log.info({ identity: this.id, shards: mine.length }, 'left the shards');
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.step();
      } catch (err) {
        this.o.log.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'shard step failed; retrying',
        );
      }
      try {
        await sleep(this.retryMs, undefined, { signal: this.wake.signal });
      } catch {
        return;
      }
    }
  }

  /** One period: renew our member Lease, list every Lease of the ring, then hand back and take. */
  private async step(): Promise<void> {
    const gen = this.generation;
    await this.renew(gen);
    const leases = await within(this.renewMs, this.list());
    const leading = this.leader ? await within(this.renewMs, this.leader()) : false;
    if (gen !== this.generation || this.stopped) return;
    const view = this.observe(leases);
    this.adoptOrDrop(view.holders, gen);
    if (this.now() >= this.fencedAt) return;
    if (leading) {
      this.yieldAll(leases, gen);
      return;
    }
    const plan = planShards(view);
    for (const k of plan.release) {
      const l = leases.find((x) => x.metadata.name === this.shardName(k));
      if (l && !this.releasing.has(k)) this.track(this.release(k, l, gen));
    }
    const step = { stale: false };
    await takeInTurn(plan.take, plan.room, async (k) => {
      // A step of an identity since abandoned, or fenced meanwhile: it takes nothing more.
      if (step.stale || gen !== this.generation || this.now() >= this.fencedAt) {
        step.stale = true;
        return false;
      }
      // Still draining our own writes of it (a fence, a drop): not ours again until they have ended.
      if (this.releasing.has(k)) return false;
      return this.take(
        k,
        leases.find((x) => x.metadata.name === this.shardName(k)),
        gen,
      );
    });
    if (step.stale) return;
    await this.prune(leases);
  }

  /** Creates our member Lease, or renews it; a success arms the fence at `renewDeadline` after sending. */
  private async renew(gen: number): Promise<void> {
    const sentAt = this.now();
    const path = this.memberPath(this.id);
    const spec: LeaseSpec = {
      holderIdentity: this.id,
      leaseDurationSeconds: Math.ceil(this.durationMs / 1000),
      renewTime: microTime(),
    };
    let rv: string | undefined;
    try {
      const written = await within(
        this.renewMs,
        this.memberRv === null
          ? this.o.api.create<Lease>(
              path.slice(0, path.lastIndexOf('/')),
              this.lease(this.memberName(this.id), 'member', spec),
            )
          : this.o.api.replace<Lease>(path, {
              ...this.lease(this.memberName(this.id), 'member', spec),
              metadata: {
                ...this.lease(this.memberName(this.id), 'member', spec).metadata,
                resourceVersion: this.memberRv,
              },
            }),
      );
      rv = written.metadata.resourceVersion;
    } catch (err) {
      // Renewing: our record was changed or removed by someone else (pruned as dead), we may have been
      // taken over. Creating: an earlier create landed though its answer was lost; a new name is simplest.
      if (gen === this.generation && err instanceof ApiError && (err.code === 409 || err.code === 404))
        await this.rejoin(
          this.memberRv === null
            ? 'our member Lease exists already'
            : 'our member Lease was changed by another',
        );
      throw err;
    }
    if (gen !== this.generation) return;
    if (this.memberRv === null) this.joinedAt = this.now();
    this.memberRv = rv ?? null;
    // A success that comes back after the deadline counts as none: the fence may already have fallen.
    if (this.now() - sentAt >= this.renewMs) return;
    this.fencedAt = sentAt + this.renewMs;
    clearTimeout(this.fence);
    this.fence = setTimeout(
      () => {
        void this.rejoin(`member Lease not renewed within ${String(this.renewMs)} ms`);
      },
      Math.max(0, this.fencedAt - this.now()),
    );
  }

  /** Fenced off or overruled: every shard is lost, and this process joins again as a new member. */
  private async rejoin(why: string): Promise<void> {
    this.generation++;
    clearTimeout(this.fence);
    this.fencedAt = 0;
    // The new identity before any await: a step that runs meanwhile must not renew the old one, nor take
    // back what still names it.
    const old = this.id;
    this.id = this.o.identity();
    this.memberRv = null;
    this.o.log.warn({ why, was: old, identity: this.id }, 'rejoining the shards as a new member');
    await this.loseAll(why);
  }

  /** Logged once their writes have ended: the chaos suite reads each shard's holders from these lines. */
  private async loseAll(why: string): Promise<void> {
    const mine = [...this.held];
    this.held.clear();
    await Promise.all(mine.map((k) => this.drain(k, why)));
  }

  /**
   * Waits for the shard's writes to end, logged then: the chaos suite reads each shard's holders from
   * these lines. Until then the shard counts as being handed back, so it is not taken again meanwhile.
   */
  private async drain(k: number, why: string): Promise<void> {
    this.releasing.add(k);
    try {
      await this.o.lost(k);
      this.o.log.info({ why, shards: [k] }, 'stopped writing shards');
    } finally {
      this.releasing.delete(k);
    }
  }

  /** What this list says: each member's liveness on our clock, the holders, who may take. */
  private observe(leases: Lease[]): ShardView {
    const at = this.now();
    const members = new Map<string, string>();
    const memberLeases = leases.filter((l) => l.metadata.labels?.[ROLE_LABEL] === 'member');
    for (const l of memberLeases) if (l.spec?.holderIdentity) members.set(l.spec.holderIdentity, record(l));
    const stale = staleMembers(memberLeases, this.id, this.durationMs);
    const holders: (string | undefined)[] = Array.from({ length: this.o.shards }, () => undefined);
    for (const l of leases) {
      const k = this.shardIndex(l.metadata.name);
      if (k !== null) holders[k] = l.spec?.holderIdentity ?? '';
    }
    const ids = new Set([...members.keys(), ...holders.filter((h): h is string => !!h)]);
    for (const id of ids) this.seen.note(id, members.get(id) ?? record(null));
    this.seen.keep(ids);
    const gone = (id: string) => id !== this.id && this.seen.unchangedFor(id) >= this.durationMs;
    // Balance only, never safety: a member long silent by its own renew time gets no share at once, but
    // its shards are taken only once it is `gone` on our clock.
    const live = [...new Set([this.id, ...members.keys()])].filter(
      (id) => id === this.id || (!gone(id) && !stale.has(id)),
    );
    const covered = holders.filter((h) => h !== undefined && h !== '' && !gone(h)).length;
    this.last = { identity: this.id, held: this.held.size, members: live.length, covered };
    return {
      shards: this.o.shards,
      me: this.id,
      live,
      holders,
      gone,
      mayTake: at < this.fencedAt && at - this.joinedAt >= this.retryMs,
    };
  }

  /**
   * Our memory brought in line with the Leases: a shard naming us that we do not count as ours (a take
   * whose answer was lost, a hand-back that failed) is ours again while we are not fenced; one we count
   * that names another (never, while the rules hold) is dropped at once.
   */
  private adoptOrDrop(holders: readonly (string | undefined)[], gen: number): void {
    for (let k = 0; k < holders.length; k++) {
      const mine = holders[k] === this.id;
      if (
        mine &&
        !this.held.has(k) &&
        !this.releasing.has(k) &&
        this.now() < this.fencedAt &&
        gen === this.generation
      ) {
        this.o.log.info({ shard: k }, 'took a shard');
        this.gain(k);
      } else if (!mine && this.held.has(k)) {
        this.held.delete(k);
        this.o.log.error({ shard: k, holder: holders[k] }, 'a shard of ours names another holder');
        this.track(this.drain(k, 'another holder'));
      }
    }
  }

  private track(p: Promise<void>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private gain(k: number): void {
    this.held.add(k);
    this.o.gained(k);
  }

  /**
   * A single leader of the same objects holds its Lease: the ring yields, every shard handed back once
   * its writes have ended (the leader waits for that before it works, `ringQuiet`).
   */
  private yieldAll(leases: Lease[], gen: number): void {
    for (const k of [...this.held]) {
      const l = leases.find((x) => x.metadata.name === this.shardName(k));
      if (l && !this.releasing.has(k)) this.track(this.release(k, l, gen, 'a single leader holds its Lease'));
    }
  }

  /**
   * A conditional write naming us holder: of two members taking one shard, one gets 409. Then, before
   * the shard is written, the single leader's Lease is read once more: a leader that took it while we
   * were taking (each having found the other quiet) finds our shard held and waits; we hand it back.
   */
  private async take(k: number, cur: Lease | undefined, gen: number): Promise<boolean> {
    const time = microTime();
    const spec: LeaseSpec = {
      holderIdentity: this.id,
      leaseDurationSeconds: Math.ceil(this.durationMs / 1000),
      acquireTime: time,
      renewTime: time,
      leaseTransitions: (cur?.spec?.leaseTransitions ?? -1) + 1,
    };
    const path = leasePath(this.o.namespace, this.shardName(k));
    const body = this.lease(this.shardName(k), 'shard', spec);
    const ok = await within(
      this.renewMs,
      conflictFree(() =>
        cur
          ? this.o.api.replace(path, {
              ...body,
              metadata: { ...body.metadata, resourceVersion: cur.metadata.resourceVersion },
            })
          : this.o.api.create(path.slice(0, path.lastIndexOf('/')), body),
      ),
    );
    // Taken under an identity since abandoned: the Lease names a stranger now, left to expire.
    if (!ok || gen !== this.generation || this.now() >= this.fencedAt) return false;
    if (this.leader && (await within(this.renewMs, this.leader()).catch(() => true))) {
      const written = await within(this.renewMs, this.o.api.get<Lease>(path)).catch(() => null);
      if (written) await this.handBack(k, written).catch(() => undefined);
      this.o.log.info({ shard: k }, 'a single leader holds its Lease: shard handed back untouched');
      return false;
    }
    if (gen !== this.generation || this.now() >= this.fencedAt) return false;
    this.o.log.info({ shard: k, from: cur?.spec?.holderIdentity ?? '' }, 'took a shard');
    this.gain(k);
    return true;
  }

  /**
   * Off the loop: the writes in flight may take a request's deadline to end, and the member Lease must
   * be renewed meanwhile.
   */
  private async release(k: number, l: Lease, gen: number, why = 'over its share'): Promise<void> {
    this.held.delete(k);
    this.releasing.add(k);
    try {
      await this.o.lost(k);
      this.o.log.info({ why, shards: [k] }, 'stopped writing shards');
      if (gen === this.generation) await this.handBack(k, l);
    } catch (err) {
      this.o.log.warn(
        { shard: k, err: err instanceof Error ? err.message : String(err) },
        'shard not handed back',
      );
    } finally {
      this.releasing.delete(k);
    }
  }

  /** Called once nothing more goes out for the shard: the next member may take it at once. */
  private async handBack(k: number, cur: Lease): Promise<void> {
    if (cur.spec?.holderIdentity !== this.id) return;
    const path = leasePath(this.o.namespace, this.shardName(k));
    await within(
      this.renewMs,
      conflictFree(() =>
        this.o.api.replace(path, {
          ...cur,
          spec: { ...cur.spec, holderIdentity: '', renewTime: microTime() },
        }),
      ),
    );
    this.o.log.info({ shard: k }, 'handed a shard back');
  }

  /** Member Leases of members long gone, deleted so that restarts leave nothing behind. */
  private async prune(leases: Lease[]): Promise<void> {
    for (const l of leases) {
      const id = l.spec?.holderIdentity;
      if (l.metadata.labels?.[ROLE_LABEL] !== 'member' || !id || id === this.id) continue;
      if (this.seen.unchangedFor(id) < PRUNE_AFTER_DURATIONS * this.durationMs) continue;
      await within(
        this.renewMs,
        this.o.api.delete(leasePath(this.o.namespace, l.metadata.name), l.metadata.resourceVersion),
      ).catch(() => undefined);
    }
  }

  private list(): Promise<Lease[]> {
    return this.o.api.list<Lease>(`/apis/coordination.k8s.io/v1/namespaces/${this.o.namespace}/leases`, {
      labelSelector: `${SHARDED_BY_LABEL}=${this.o.name}`,
    });
  }

  private lease(
    name: string,
    role: 'member' | 'shard',
    spec: LeaseSpec,
  ): Lease & { apiVersion: string; kind: string } {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name,
        namespace: this.o.namespace,
        labels: { [SHARDED_BY_LABEL]: this.o.name, [ROLE_LABEL]: role },
      },
      spec,
    };
  }

  private shardName(k: number): string {
    return `${this.o.name}-shard-${String(k)}`;
  }

  private shardIndex(name: string): number | null {
    const prefix = `${this.o.name}-shard-`;
    if (!name.startsWith(prefix)) return null;
    const k = Number(name.slice(prefix.length));
    return Number.isInteger(k) && k >= 0 && k < this.o.shards ? k : null;
  }

  /** Identities carry a pod's name and `_`; a Lease's name may not, so the name is a digest of it. */
  private memberName(id: string): string {
    return `${this.o.name}-member-${memberSuffix(id)}`;
  }

  private memberPath(id: string): string {
    return leasePath(this.o.namespace, this.memberName(id));
  }
}

function memberSuffix(id: string): string {
  return (
    id
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(-40) || 'member'
  );
}

/** When the API server last changed a Lease (its latest managedFields time), on the server's clock. */
function writtenAt(l: Lease | undefined): number {
  let at = NaN;
  for (const f of l?.metadata.managedFields ?? []) {
    const t = Date.parse(f.time ?? '');
    if (Number.isFinite(t) && !(t <= at)) at = t;
  }
  return at;
}

/**
 * Members whose Lease is a lease duration older than ours: no share for them (balance only, never
 * safety). Both times are the API server's, so a member whose clock is off is judged as any other; a
 * renew time is the writer's own clock, and is read only where the server keeps no managedFields.
 */
export function staleMembers(memberLeases: readonly Lease[], me: string, durationMs: number): Set<string> {
  const mine = writtenAt(memberLeases.find((l) => l.spec?.holderIdentity === me));
  const out = new Set<string>();
  for (const l of memberLeases) {
    const id = l.spec?.holderIdentity;
    if (!id || id === me) continue;
    const server = writtenAt(l);
    const old =
      Number.isFinite(server) && Number.isFinite(mine)
        ? mine - server >= durationMs
        : Date.now() - Date.parse(l.spec?.renewTime ?? '') >= durationMs;
    if (old) out.add(id);
  }
  return out;
}
