import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { planShards, shardOf, share, takeInTurn, type ShardView } from '../../src/kube/sharding/ring.js';
import { Sharder, staleMembers } from '../../src/kube/sharding/sharder.js';
import { ringQuiet } from '../../src/kube/sharding/exclusion.js';
import { Elected, type Lease } from '../../src/kube/lease.js';
import { FakeObjects } from '../support/fake-objects.js';
import { until } from '../support/http.js';
import { Link } from '../support/link.js';
import { ApiError } from '../../src/kube/client.js';

/**
 * The fleet's shards: the pure plan (what a member gives back and takes), then members against the
 * in-memory object store on short real timers (a lease of 600 ms, a renew deadline of 400 ms, a period
 * of 60 ms: client-go's 15/10/2 s ratios, roughly), sampled every few ms: at no sample may two members
 * own one shard.
 */

const log = pino({ level: 'silent' });
const SHARDS = 12;
const DURATION = 600;
const RENEW = 400;
const RETRY = 60;

describe('shard plan', () => {
  const view = (
    me: string,
    live: string[],
    holders: (string | undefined)[],
    gone: string[] = [],
  ): ShardView => ({
    shards: holders.length,
    me,
    live,
    holders,
    gone: (id) => gone.includes(id),
    mayTake: true,
  });

  it('spreads node names evenly', () => {
    const counts = new Array<number>(60).fill(0);
    for (let i = 0; i < 60_000; i++) {
      const k = shardOf(`kwok-gpu-${String(i)}`, 60);
      counts[k] = (counts[k] ?? 0) + 1;
    }
    assert.ok(Math.min(...counts) > 850 && Math.max(...counts) < 1150, counts.join(','));
  });

  it('a joiner takes only its share: each member gives back what is over it', () => {
    const holders = Array.from({ length: 60 }, (_, k) => ['a', 'b', 'c'][k % 3]);
    const live = ['a', 'b', 'c', 'd'];
    const given = ['a', 'b', 'c'].flatMap((m) => planShards(view(m, live, holders)).release);
    assert.equal(given.length, 60 - 3 * share(60, 4), 'the three give back 5 each');
    const after = holders.map((h, k) => (given.includes(k) ? '' : h));
    const { take, release } = planShards(view('d', live, after));
    assert.deepEqual(release, []);
    assert.deepEqual(
      [...take].sort((x, y) => x - y),
      [...given].sort((x, y) => x - y),
    );
    // And nothing else moves: the others keep what they hold and take nothing.
    for (const m of ['a', 'b', 'c'])
      assert.deepEqual(planShards(view(m, live, after)), { release: [], take: [], room: 0 });
  });

  it("a dead member's shards go to the others, and only those", () => {
    const holders = Array.from({ length: 60 }, (_, k) => ['a', 'b', 'c', 'd'][k % 4]);
    const live = ['a', 'b', 'c'];
    const taken = ['a', 'b', 'c'].map((m) => planShards(view(m, live, holders, ['d'])));
    for (const p of taken) assert.deepEqual(p.release, []);
    const all = taken.flatMap((p) => p.take);
    assert.ok(all.every((k) => holders[k] === 'd'));
    // Each has room for 5 (20 - 15) and may try all 15, most preferred first: a shard another took first
    // (409) is passed over for the next, in the same period.
    for (const p of taken) {
      assert.equal(p.room, 5);
      assert.equal(p.take.length, 15);
    }
  });

  it('takes up to its room, passing over the shards another member took first', async () => {
    const tried: number[] = [];
    const lostRace = new Set([7, 3]);
    const taken = await takeInTurn([7, 1, 3, 9, 4, 2], 3, (k) => {
      tried.push(k);
      return Promise.resolve(!lostRace.has(k));
    });
    assert.deepEqual(taken, [1, 9, 4]);
    assert.deepEqual(tried, [7, 1, 3, 9, 4], 'nothing tried once the room is full');
    assert.deepEqual(await takeInTurn([5], 0, () => Promise.resolve(true)), []);
  });

  it('takes nothing before it may (not yet settled in, or fenced), and never a live holder’s shard', () => {
    const holders = ['a', undefined, '', 'b'];
    assert.deepEqual(planShards({ ...view('c', ['a', 'b', 'c'], holders), mayTake: false }).take, []);
    assert.deepEqual(planShards(view('c', ['a', 'b', 'c'], holders)).take.sort(), [1, 2]);
  });
});

/** Each member's shards, and the sampler that fails on any two owning one shard at once. */
class Ring {
  readonly members: { s: Sharder; link: Link; name: string; stopped: boolean }[] = [];
  overlaps: string[] = [];
  private sampler: NodeJS.Timeout | undefined;
  /** Shards lost and not yet drained, by member: its writes still going out. */
  readonly draining = new Map<string, Set<number>>();

  constructor(
    readonly store: FakeObjects,
    private readonly drainMs = 0,
  ) {}

  add(
    name: string,
    link = new Link(this.store),
    exclusive = false,
  ): { s: Sharder; link: Link; name: string; stopped: boolean } {
    let n = 0;
    const draining = new Set<number>();
    this.draining.set(name, draining);
    const s = new Sharder({
      api: link,
      namespace: 'fakegpu',
      name: 'fakegpu-fleet',
      shards: SHARDS,
      identity: () => `${name}_${String(n++)}`,
      leaseDurationMs: DURATION,
      renewDeadlineMs: RENEW,
      retryPeriodMs: RETRY,
      log,
      exclusive,
      gained: () => undefined,
      lost: async (k) => {
        draining.add(k);
        await sleep(this.drainMs);
        draining.delete(k);
      },
    });
    const m = { s, link, name, stopped: false };
    this.members.push(m);
    s.start();
    return m;
  }

  /** Who writes shard k now: an owner, or one whose lost writes are still draining. */
  writers(k: number): string[] {
    return this.members.flatMap((m) =>
      !m.stopped && (m.s.owns(k) || this.draining.get(m.name)?.has(k)) ? [m.name] : [],
    );
  }

  sample(): void {
    this.sampler = setInterval(() => {
      for (let k = 0; k < SHARDS; k++) {
        const w = this.writers(k);
        if (w.length > 1) this.overlaps.push(`shard ${String(k)}: ${w.join(',')}`);
      }
    }, 3);
  }

  held(name: string): number {
    const m = this.members.find((x) => x.name === name);
    return m ? Array.from({ length: SHARDS }, (_, k) => k).filter((k) => m.s.owns(k)).length : 0;
  }

  covered(): boolean {
    return Array.from({ length: SHARDS }, (_, k) => this.writers(k).length === 1).every(Boolean);
  }

  async stop(): Promise<void> {
    clearInterval(this.sampler);
    for (const m of this.members) if (!m.stopped) await m.s.stop();
  }
}

describe('sharder', () => {
  let ring: Ring | null = null;
  /** Leaders a test started, stopped even when it fails (a running one keeps the process alive). */
  const electeds: Elected[] = [];
  afterEach(async () => {
    await ring?.stop();
    ring = null;
    for (const e of electeds.splice(0)) await e.stop();
  });

  it('three members split the shards evenly, each shard held by exactly one', async () => {
    ring = new Ring(new FakeObjects());
    ring.sample();
    for (const n of ['a', 'b', 'c']) ring.add(n);
    const r = ring;
    await until(
      'the shards to settle',
      () => r.covered() && ['a', 'b', 'c'].every((n) => r.held(n) === 4),
      10_000,
    );
    assert.deepEqual(ring.overlaps, []);
  });

  it('a joiner takes only its share, after the givers have drained their writes', async () => {
    ring = new Ring(new FakeObjects(), 150);
    ring.sample();
    for (const n of ['a', 'b']) ring.add(n);
    const r = ring;
    await until('the shards to settle', () => r.covered() && r.held('a') === 6 && r.held('b') === 6, 10_000);
    const before = Array.from({ length: SHARDS }, (_, k) => r.writers(k)[0]);
    ring.add('c');
    await until('the shards to settle', () => r.covered() && r.held('c') === 4, 10_000);
    const after = Array.from({ length: SHARDS }, (_, k) => r.writers(k)[0]);
    const moved = after.filter((w, k) => w !== before[k]);
    assert.deepEqual(moved, ['c', 'c', 'c', 'c'], 'only the joiner’s share moved');
    assert.deepEqual(ring.overlaps, []);
  });

  it('a member cut off stops writing before another takes its shards, which move within the lease', async () => {
    ring = new Ring(new FakeObjects());
    ring.sample();
    const a = ring.add('a');
    ring.add('b');
    const r = ring;
    await until('the shards to settle', () => r.covered() && r.held('a') === 6, 10_000);
    a.link.mode = 'hang';
    const cutAt = performance.now();
    await until('the shards to settle', () => r.held('a') === 0, 10_000);
    assert.ok(performance.now() - cutAt <= RENEW + 100, 'fenced at the renew deadline');
    await until('the shards to settle', () => r.held('b') === SHARDS, 10_000);
    // Seen unchanged for a lease duration after its last renew (at most a period before the cut).
    const moved = performance.now() - cutAt;
    assert.ok(moved >= DURATION - RETRY - 20, `not before the lease ran out (${String(moved)} ms)`);
    assert.ok(
      moved <= DURATION + 4 * RETRY + 150,
      `within the lease and a few periods (${String(moved)} ms)`,
    );
    assert.deepEqual(ring.overlaps, []);
    // Healed, it comes back as a new member and gets its share again.
    a.link.mode = 'up';
    await until('the shards to settle', () => r.held('a') === 6 && r.held('b') === 6, 10_000);
    assert.deepEqual(ring.overlaps, []);
  });

  it('a clean stop hands the shards back: the others take them without waiting out the lease', async () => {
    ring = new Ring(new FakeObjects(), 50);
    ring.sample();
    ring.add('a');
    ring.add('b');
    const r = ring;
    const a = r.members[0] ?? assert.fail('no member');
    await until('the shards to settle', () => r.covered() && r.held('a') === 6, 10_000);
    const at = performance.now();
    await a.s.stop();
    a.stopped = true;
    await until('the shards to settle', () => r.held('b') === SHARDS, 10_000);
    assert.ok(performance.now() - at < DURATION, 'sooner than a lease duration');
    assert.deepEqual(ring.overlaps, []);
    assert.equal(
      ring.store.objects.size,
      SHARDS + 1,
      'its member Lease is gone; the shard Leases and b’s member Lease stay',
    );
  });

  it('a member fenced while its writes drain rejoins under a new name: it never owns a shard it is still draining', async () => {
    ring = new Ring(new FakeObjects(), 1500);
    const r = ring;
    const a = r.add('a');
    r.add('b');
    await until('the shards to settle', () => r.covered() && r.held('a') === 6, 10_000);
    const stale: string[] = [];
    const sampler = setInterval(() => {
      for (let k = 0; k < SHARDS; k++)
        if (a.s.owns(k) && r.draining.get('a')?.has(k)) stale.push(`shard ${String(k)}`);
    }, 3);
    try {
      a.link.mode = 'hang';
      await until('a fenced', () => r.held('a') === 0, 10_000);
      a.link.mode = 'up';
      await sleep(1600);
    } finally {
      clearInterval(sampler);
    }
    assert.deepEqual(stale, []);
    assert.notEqual(a.s.state().identity, 'a_0', 'a new name');
    await until('a holds its share again', () => r.covered() && r.held('a') === 6, 10_000);
  });

  it('a member whose create was applied but not answered joins under a new name instead of sticking', async () => {
    const store = new FakeObjects();
    ring = new Ring(store);
    const r = ring;
    // The first create of a member Lease lands, and its answer is lost.
    const link = new Link(store);
    const create = link.create.bind(link);
    let lost = false;
    link.create = async <T>(c: string, o: object): Promise<T> => {
      const out = await create<T>(c, o);
      if (!lost && (o as { metadata: { name: string } }).metadata.name.includes('-member-')) {
        lost = true;
        throw new ApiError(504, 'the answer was lost');
      }
      return out;
    };
    r.add('a', link);
    await until('a holds every shard', () => r.held('a') === SHARDS, 10_000);
  });

  it("staleness is judged on the API server's clock: a member whose clock is an hour behind keeps its share", () => {
    const lease = (id: string, serverTime: string | undefined, renewTime: string): Lease => ({
      metadata: {
        name: `fakegpu-fleet-member-${id}`,
        ...(serverTime ? { managedFields: [{ time: '2026-12-07T08:00:00Z' }, { time: serverTime }] } : {}),
      },
      spec: { holderIdentity: id, renewTime },
    });
    const now = new Date().toISOString();
    const anHourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const t = (s: number) => new Date(Date.parse('2026-12-07T09:00:00Z') + s * 1000).toISOString();
    const leases = [
      lease('me', t(60), now),
      lease('skewed', t(59), anHourAgo),
      lease('ghost', t(30), now),
      lease('fast', t(58), new Date(Date.now() + 3_600_000).toISOString()),
    ];
    assert.deepEqual([...staleMembers(leases, 'me', 15_000)], ['ghost']);
    // Without managedFields (an API server that keeps none), the renew times are all there is.
    assert.deepEqual(
      [...staleMembers([lease('me', undefined, now), lease('skewed', undefined, anHourAgo)], 'me', 15_000)],
      ['skewed'],
    );
  });

  it('a member whose own renew time is long past gets no share, so the others split the shards at once', async () => {
    const store = new FakeObjects();
    const old = new Date(Date.now() - 3_600_000).toISOString();
    store.seed('/apis/coordination.k8s.io/v1/namespaces/fakegpu/leases', {
      metadata: {
        name: 'fakegpu-fleet-member-ghost',
        namespace: 'fakegpu',
        labels: { 'fakegpu.dev/sharded-by': 'fakegpu-fleet', 'fakegpu.dev/shard-role': 'member' },
      },
      spec: { holderIdentity: 'ghost', leaseDurationSeconds: 1, renewTime: old },
    });
    ring = new Ring(store);
    const r = ring;
    r.add('a');
    await until('a takes shards', () => r.held('a') > 0, 10_000);
    await sleep(30);
    assert.equal(r.held('a'), SHARDS, 'all of them in its first taking, not half');
  });

  it('a rollout between one leader and shards never has both writing: each waits for the other to stop', async () => {
    const store = new FakeObjects();
    const leader = (who: string): Elected =>
      new Elected({
        election: {
          api: new Link(store),
          namespace: 'fakegpu',
          name: 'fakegpu-fleet',
          identity: who,
          leaseDurationMs: DURATION,
          renewDeadlineMs: RENEW,
          retryPeriodMs: RETRY,
          mayAcquire: ringQuiet(new Link(store), 'fakegpu', 'fakegpu-fleet', DURATION),
        },
        log,
        lead: () => ({ stop: () => Promise.resolve() }),
      });
    // One leader writes; a sharded replica arrives (the chart's replicas from 1 to 3).
    const old = leader('old');
    electeds.push(old);
    old.start();
    await until('the leader leads', () => old.leading, 10_000);
    ring = new Ring(store);
    const r = ring;
    const a = r.add('a', new Link(store), true);
    await sleep(DURATION * 2);
    assert.equal(r.held('a'), 0, 'no shard while the leader writes');
    await old.stop();
    await until('a takes every shard', () => r.held('a') === SHARDS, 10_000);
    // And back: a new leader waits until the sharded replica has stopped and handed its shards back.
    const next = leader('next');
    electeds.push(next);
    next.start();
    await sleep(DURATION * 2);
    assert.equal(next.leading, false, 'no leader while a shard is held');
    await a.s.stop();
    a.stopped = true;
    await until('the new leader leads', () => next.leading, 10_000);
    await next.stop();
  });

  it('a leader and a shard taken at once, each having found the other quiet: the ring yields, then the leader writes', async () => {
    const store = new FakeObjects();
    ring = new Ring(store);
    const r = ring;
    // The member's reads of the leader's Lease, counted: its second comes in the step that takes shards.
    const memberLink = new Link(store);
    let leaderReads = 0;
    const get = memberLink.get.bind(memberLink);
    memberLink.get = <T>(p: string) => {
      if (p.endsWith('/leases/fakegpu-fleet')) leaderReads++;
      return get<T>(p);
    };
    const quiet = ringQuiet(new Link(store), 'fakegpu', 'fakegpu-fleet', DURATION);
    let asked = 0;
    const leader = new Elected({
      election: {
        api: new Link(store),
        namespace: 'fakegpu',
        name: 'fakegpu-fleet',
        identity: 'leader',
        leaseDurationMs: DURATION,
        renewDeadlineMs: RENEW,
        retryPeriodMs: RETRY,
        // Its first answer is read before the member takes anything, and given only once the member has
        // read the leader's Lease (absent) in the step that takes: both look away at once.
        mayAcquire: async () => {
          if (asked++ > 0) return quiet();
          const answer = await quiet();
          await until('the member to read the leader Lease twice', () => leaderReads >= 2, 10_000);
          return answer;
        },
      },
      log,
      lead: () => ({ stop: () => Promise.resolve() }),
    });
    electeds.push(leader);
    const both: string[] = [];
    const sampler = setInterval(() => {
      const shards = r.held('a');
      if (leader.leading && shards > 0) both.push(`leader and a (${String(shards)} shards)`);
    }, 2);
    try {
      leader.start();
      r.add('a', memberLink, true);
      await until('the leader leads', () => leader.leading, 10_000);
      await sleep(DURATION);
      assert.deepEqual(both, [], 'never both writing');
      assert.equal(r.held('a'), 0, 'the ring yielded');
      assert.ok(leaderReads >= 2);
    } finally {
      clearInterval(sampler);
    }
  });
});
