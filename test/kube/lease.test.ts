import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { Elected, leasePath } from '../../src/kube/lease.js';
import { FakeObjects } from '../support/fake-objects.js';
import { Link } from '../support/link.js';
import { until } from '../support/http.js';

/**
 * Leader election against the in-memory object store, on short real timers (a lease of 400 ms, a renew
 * deadline of 250 ms, a retry every 40 ms): the same ratios as client-go's 15 s, 10 s and 2 s.
 */

const log = pino({ level: 'silent' });
const NS = 'fakegpu';
const NAME = 'fakegpu-fleet';
const DURATION = 400;
const RENEW = 250;
const RETRY = 40;

interface LeaseObj {
  metadata: { resourceVersion: string };
  spec: { holderIdentity?: string; renewTime?: string; leaseTransitions?: number };
}

/** Every term of every candidate as [start, end) on one clock: overlapping terms are two writers. */
class Terms {
  readonly spans: { who: string; start: number; end: number | null }[] = [];

  candidate(
    store: FakeObjects,
    who: string,
    t: { duration: number; renew: number; retry: number } = {
      duration: DURATION,
      renew: RENEW,
      retry: RETRY,
    },
  ): { e: Elected; link: Link } {
    const link = new Link(store);
    const e = new Elected({
      election: {
        api: link,
        namespace: NS,
        name: NAME,
        identity: who,
        leaseDurationMs: t.duration,
        renewDeadlineMs: t.renew,
        retryPeriodMs: t.retry,
      },
      log,
      lead: () => {
        const span = { who, start: performance.now(), end: null as number | null };
        this.spans.push(span);
        return {
          stop: () => {
            span.end = performance.now();
            return Promise.resolve();
          },
        };
      },
    });
    live.push(e);
    return { e, link };
  }

  noOverlap(): void {
    const s = [...this.spans].sort((a, b) => a.start - b.start);
    for (let i = 1; i < s.length; i++) {
      const prev = s[i - 1];
      const cur = s[i];
      if (!prev || !cur) continue;
      assert.ok(
        prev.end !== null && prev.end <= cur.start,
        `${prev.who}'s term [${String(prev.start)}, ${String(prev.end)}) overlaps ${cur.who}'s from ${String(cur.start)}`,
      );
    }
  }
}

/** Every candidate a test started, stopped after it even when it fails, so that none outlives it. */
let live: Elected[] = [];
afterEach(async () => {
  await Promise.all(live.map((e) => e.stop()));
  live = [];
});

/** `a` leading and `b` standing by, b having read the lease a few times. */
async function leaderAndStandby() {
  const store = new FakeObjects();
  const terms = new Terms();
  const a = terms.candidate(store, 'a');
  a.e.start();
  await until('a leads', () => a.e.leading);
  const b = terms.candidate(store, 'b');
  b.e.start();
  await sleep(RETRY * 3);
  return { store, terms, a, b };
}

const lease = (store: FakeObjects) => store.read<LeaseObj>(leasePath(NS, NAME));

describe('leader election over a Lease', () => {
  it('acquires a free lease, renews it, and a standby neither leads nor writes', async () => {
    const store = new FakeObjects();
    const terms = new Terms();
    const a = terms.candidate(store, 'a');
    a.e.start();
    await until('a leads', () => a.e.leading);
    assert.equal(lease(store)?.spec.holderIdentity, 'a');
    const renewed = lease(store)?.spec.renewTime;
    const b = terms.candidate(store, 'b');
    b.e.start();
    await sleep(DURATION * 3);
    assert.ok(a.e.leading, 'a still leads');
    assert.ok(!b.e.leading, 'b stands by');
    assert.deepEqual(b.link.writes, [], 'a standby only reads the lease');
    assert.notEqual(lease(store)?.spec.renewTime, renewed, 'a renewed');
    assert.equal(lease(store)?.spec.leaseTransitions, 0);
    assert.equal(a.e.terms, 1);
    await a.e.stop();
    await b.e.stop();
    terms.noOverlap();
  });

  it('is decided only once the API server has answered an attempt: before, neither leader nor standby', async () => {
    const store = new FakeObjects();
    const terms = new Terms();
    const a = terms.candidate(store, 'a');
    a.link.mode = 'fail';
    a.e.start();
    await sleep(RETRY * 3);
    assert.ok(!a.e.decided && !a.e.leading);
    a.link.mode = 'up';
    await until('a leads', () => a.e.leading);
    assert.ok(a.e.decided);
    const b = terms.candidate(store, 'b');
    assert.ok(!b.e.decided, 'not before it starts');
    b.e.start();
    await until('b decided', () => b.e.decided);
    assert.ok(!b.e.leading, 'b stands by');
  });

  it('a leader cut off stops before the lease runs out, and only then does the standby take over', async () => {
    for (const mode of ['fail', 'hang'] as const) {
      const { store, terms, a, b } = await leaderAndStandby();
      a.link.mode = mode;
      const cut = performance.now();
      await until(`b leads (${mode})`, () => b.e.leading, DURATION * 5);
      const aTerm = terms.spans.find((s) => s.who === 'a');
      const bTerm = terms.spans.find((s) => s.who === 'b');
      assert.ok(aTerm?.end !== null && aTerm?.end !== undefined, `a stopped (${mode})`);
      // What matters, with room for a loaded machine's late timers: stopped before the lease ran out.
      assert.ok(aTerm.end - cut < DURATION, `a stopped before its lease ran out (${mode})`);
      assert.ok(bTerm && bTerm.start - cut >= DURATION - RETRY * 2, `b waited out the lease (${mode})`);
      assert.ok(!a.e.leading);
      assert.equal(lease(store)?.spec.holderIdentity, 'b');
      assert.equal(lease(store)?.spec.leaseTransitions, 1);
      terms.noOverlap();
      a.link.mode = 'up';
      await sleep(DURATION);
      assert.ok(!a.e.leading, `a, reconnected, stands by (${mode})`);
      await a.e.stop();
      await b.e.stop();
    }
  });

  /**
   * A standby `b` beside a Lease whose holder is dead, on a lease four times the other tests' (the timers
   * of a loaded machine get 600 ms of slack) and a retry period close to it (3/4), so that the old rule,
   * the next poll after expiry, shows.
   */
  function deadHolderStandby(now?: () => number): {
    store: FakeObjects;
    b: Elected;
    duration: number;
    retry: number;
  } {
    const store = new FakeObjects();
    store.seed(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, {
      metadata: { name: NAME, namespace: NS },
      spec: { holderIdentity: 'dead', leaseDurationSeconds: 1, renewTime: 'then', leaseTransitions: 0 },
    });
    const duration = DURATION * 4;
    const retry = duration * 0.75;
    const b = new Elected({
      election: {
        api: new Link(store),
        namespace: NS,
        name: NAME,
        identity: 'b',
        leaseDurationMs: duration,
        renewDeadlineMs: RENEW * 4,
        retryPeriodMs: retry,
      },
      log,
      now,
      lead: () => ({ stop: () => Promise.resolve() }),
    });
    live.push(b);
    return { store, b, duration, retry };
  }

  it("a standby takes a dead holder's lease when it runs out, not at the next retry after that", async () => {
    const { store, b, duration, retry } = deadHolderStandby();
    const started = performance.now();
    b.start();
    await until('b leads', () => b.leading, duration * 4);
    const took = performance.now() - started;
    assert.ok(took >= duration, `b waited out the lease (${took.toFixed(0)} ms)`);
    assert.ok(took < duration + retry / 2, `b led ${took.toFixed(0)} ms after it first saw the lease`);
    assert.equal(lease(store)?.spec.holderIdentity, 'b');
  });

  it('a standby that sees the lease run out while it was busy tries at once, not a retry period later', async () => {
    // A loaded machine: between the second attempt's look at the lease (not run out yet) and the pause
    // after it, half a second passes (the sixth reading of the clock is the pause's).
    let readings = 0;
    const t0 = performance.now();
    const { b, duration, retry } = deadHolderStandby(
      () => performance.now() - t0 + (++readings >= 6 ? 500 : 0),
    );
    b.start();
    await until('b leads', () => b.leading, duration * 4);
    const took = performance.now() - t0;
    assert.ok(took < retry + 400, `b led ${took.toFixed(0)} ms after start, not a retry period after expiry`);
  });

  it("a standby dates the holder's renew from its slow GET's answer, not from when it asked", async () => {
    // Twice the other tests' timings, so that a loaded machine's timer slop stays well inside the margins.
    const t = { duration: DURATION * 2, renew: RENEW * 2, retry: RETRY * 2 };
    const slow = t.renew - 50;
    const store = new FakeObjects();
    const terms = new Terms();
    const a = terms.candidate(store, 'a', t);
    a.e.start();
    await until('a leads', () => a.e.leading);
    const b = terms.candidate(store, 'b', t);
    // b's first GET is held by the API server for `slow` ms; as it reads, a's link is cut. a's last renew
    // was sent at most a retry period before that read, so a works until nearly renew after the read.
    b.link.getDelays.push(slow);
    b.link.onSlowRead = () => {
      a.link.mode = 'hang';
    };
    const asked = performance.now();
    b.e.start();
    await until('b leads', () => b.e.leading, t.duration * 5);
    terms.noOverlap();
    const bTerm = terms.spans.find((s) => s.who === 'b');
    assert.ok(
      bTerm && bTerm.start - asked >= slow + t.duration - t.retry,
      'b waited a lease after the answer',
    );
  });

  it("a stop while a fenced term's writes still drain waits for them, and logs the term's end", async () => {
    const store = new FakeObjects();
    const link = new Link(store);
    let drained = (): void => undefined;
    const draining = new Promise<void>((resolve) => {
      drained = resolve;
    });
    let fenced = false;
    const lines: string[] = [];
    const e = new Elected({
      election: {
        api: link,
        namespace: NS,
        name: NAME,
        identity: 'a',
        leaseDurationMs: DURATION,
        renewDeadlineMs: RENEW,
        retryPeriodMs: RETRY,
      },
      log: pino(
        { level: 'info' },
        { write: (l: string) => lines.push((JSON.parse(l) as { msg: string }).msg) },
      ),
      lead: () => ({
        stop: () => {
          fenced = true;
          return draining;
        },
      }),
    });
    live.push(e);
    try {
      e.start();
      await until('a leads', () => e.leading);
      link.mode = 'hang';
      await until('the fence falls', () => fenced, DURATION * 2);
      // The server answers again while the term still drains: renewed, but no second term meanwhile.
      link.mode = 'up';
      // Long enough for the attempt hung on the cut link to time out and the next to renew.
      await sleep(RENEW + RETRY * 4);
      assert.equal(e.terms, 1, 'no new term while the last one drains');
      assert.ok(!e.leading);
      let stopped = false;
      const stopping = e.stop().then(() => {
        stopped = true;
      });
      await sleep(RETRY * 3);
      assert.equal(stopped, false, 'the stop waits for the writes in flight');
      assert.ok(!lines.includes('stopped leading'));
      drained();
      await stopping;
      assert.ok(lines.includes('stopped leading'), "the term's end is logged before the process may leave");
    } finally {
      // Else a failed assertion would leave afterEach's stop waiting on the drain for ever.
      drained();
    }
  });

  it('a clean stop releases the lease, so the standby leads at once', async () => {
    const { store, terms, a, b } = await leaderAndStandby();
    const stopped = performance.now();
    await a.e.stop();
    assert.equal(lease(store)?.spec.holderIdentity, '', 'released');
    await until('b leads', () => b.e.leading, DURATION);
    assert.ok(performance.now() - stopped < DURATION, 'before the lease would have run out');
    await b.e.stop();
    terms.noOverlap();
  });

  it('of candidates racing for a free lease exactly one leads; a renew that loses a race stops at once', async () => {
    const store = new FakeObjects();
    const terms = new Terms();
    const all = ['a', 'b', 'c'].map((w) => terms.candidate(store, w));
    for (const c of all) c.e.start();
    await until('one leads', () => all.some((c) => c.e.leading));
    await sleep(DURATION);
    assert.equal(all.filter((c) => c.e.leading).length, 1);
    const leader = all.find((c) => c.e.leading);
    assert.ok(leader);
    for (const c of all) if (c !== leader) await c.e.stop();
    // A rival's write lands between the leader's read and its write: the leader's PUT gets 409.
    leader.link.beforePut = () => {
      const cur = lease(store);
      if (cur)
        store.seed(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, {
          ...cur,
          metadata: { ...cur.metadata, name: NAME },
          spec: { ...cur.spec, holderIdentity: 'rival', renewTime: 'later' },
        });
    };
    const raced = performance.now();
    await until('the leader stands down', () => !leader.e.leading, RENEW * 2);
    assert.ok(performance.now() - raced < RENEW, 'at the next read, not at the deadline');
    assert.equal(lease(store)?.spec.holderIdentity, 'rival', 'its write did not overwrite the rival');
    await leader.e.stop();
    assert.equal(lease(store)?.spec.holderIdentity, 'rival', 'nor did its stop release the rival');
    terms.noOverlap();
  });

  it('without election the work runs at once until stopped', async () => {
    let stops = 0;
    const e = new Elected({
      log,
      lead: () => ({
        stop: () => {
          stops++;
          return Promise.resolve();
        },
      }),
    });
    e.start();
    assert.ok(e.leading);
    await e.stop();
    assert.equal(stops, 1);
  });
});
