import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import {
  runComputeDomainController,
  type RunningController,
} from '../../src/controllers/compute-domain/run.js';
import { domainPath, FINALIZER, type ComputeDomain } from '../../src/model/compute-domain/resource.js';
import { ApiError } from '../../src/kube/client.js';
import type { ObjectApi } from '../../src/kube/objects.js';
import type { ListQuery } from '../../src/kube/api.js';
import { runUntilStopped } from '../../src/process/shutdown.js';
import { FakeObjects } from '../support/fake-objects.js';
import { until } from '../support/http.js';
import { FakeHost, probe } from '../support/process.js';

const log = pino({ level: 'silent' });
const CD_NS = '/apis/resource.nvidia.com/v1beta1/namespaces/team/computedomains';

/** The controller on a short period, its probes on a free port. */
const served = (api: FakeObjects) => ({
  api,
  namespace: 'nvidia-dra-driver-gpu',
  image: 'daemon:1',
  httpEndpoint: '127.0.0.1:0',
  log,
  periodMs: 10,
});

const LEASE =
  '/apis/coordination.k8s.io/v1/namespaces/nvidia-dra-driver-gpu/leases/fakegpu-compute-domain-controller';

/**
 * A slow API server: each write answers after `delayMs`, applied only then, and one whose deadline
 * comes first is dropped, as the client aborts it. The Lease's renewals can be stalled; what reached the
 * store, and when, is recorded.
 */
class SlowServer implements ObjectApi {
  stallRenewals = false;
  /** When the last renewal that reached the store was sent (monotonic ms). */
  renewedAt = 0;
  readonly applied: { what: string; at: number }[] = [];
  constructor(
    private readonly store: FakeObjects,
    private readonly delayMs: number,
  ) {}
  private async slow<T>(what: string, t: number | undefined, f: () => Promise<T>): Promise<T> {
    if (t !== undefined && t < this.delayMs) {
      await new Promise((r) => setTimeout(r, t));
      throw new ApiError(0, `${what}: no answer within ${String(t)} ms`);
    }
    await new Promise((r) => setTimeout(r, this.delayMs));
    this.applied.push({ what, at: performance.now() });
    return f();
  }
  list<T>(c: string, q?: ListQuery): Promise<T[]> {
    return this.store.list<T>(c, q);
  }
  get<T>(p: string): Promise<T | null> {
    return this.store.get<T>(p);
  }
  create<T>(c: string, o: object, t?: number): Promise<T> {
    if (c.endsWith('/leases')) return this.store.create<T>(c, o);
    return this.slow(`POST ${c}`, t, () => this.store.create<T>(c, o));
  }
  async replace<T>(p: string, o: object, t?: number): Promise<T> {
    if (p !== LEASE) return this.slow(`PUT ${p}`, t, () => this.store.replace<T>(p, o));
    if (this.stallRenewals) return new Promise<T>(() => undefined);
    const sent = performance.now();
    const r = await this.store.replace<T>(p, o);
    this.renewedAt = sent;
    return r;
  }
  patch<T>(p: string, o: object, t?: number): Promise<T> {
    return this.slow(`PATCH ${p}`, t, () => this.store.patch<T>(p, o));
  }
  delete(p: string, rv?: string, t?: number): Promise<boolean> {
    return this.slow(`DELETE ${p}`, t, () => this.store.delete(p, rv));
  }
}

describe('compute-domain-controller, as its run module wires it', () => {
  it('reconciles, answers its probes on the shared server, and stops on a signal', async () => {
    const api = new FakeObjects();
    api.seed(CD_NS, {
      metadata: { name: 'job' },
      spec: { numNodes: 0, channel: { resourceClaimTemplate: { name: 'job-channel' } } },
    });
    const host = new FakeHost();
    let running: RunningController | undefined;
    const done = runUntilStopped(async () => (running = await runComputeDomainController(served(api))), {
      log,
      host,
    });
    await until('started', () => running !== undefined);
    const port = running?.probePort;
    assert.ok(typeof port === 'number' && port > 0);
    assert.deepEqual(await probe(port, '/healthz'), { status: 200, text: 'ok\n', type: 'text/plain' });
    assert.deepEqual(await probe(port, '/readyz'), { status: 200, text: 'ok\n', type: 'text/plain' });
    assert.equal((await probe(port, '/metrics')).status, 404, 'the controller has no metrics');
    await until('the domain has its finalizer', () =>
      (api.read<ComputeDomain>(domainPath('team', 'job'))?.metadata.finalizers ?? []).includes(FINALIZER),
    );
    host.emit('SIGTERM');
    await done;
    await assert.rejects(probe(port, '/healthz'), 'the probe server is closed');
    const calls = api.calls.length;
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(api.calls.length, calls, 'no pass after the stop');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(host.exits, [undefined]);
  });

  it('with leader election one replica reconciles; the standby is live and ready, and takes over on release', async () => {
    const api = new FakeObjects();
    const run = (identity: string) =>
      runComputeDomainController({
        ...served(api),
        leaderElection: {
          namespace: 'nvidia-dra-driver-gpu',
          name: 'fakegpu-compute-domain-controller',
          identity,
          leaseDurationMs: 400,
          renewDeadlineMs: 250,
          retryPeriodMs: 40,
        },
      });
    const a = await run('a');
    await until('a leads', () => a.leading());
    const b = await run('b');
    await new Promise((r) => setTimeout(r, 600));
    assert.ok(a.leading() && !b.leading(), 'one leader');
    for (const path of ['/healthz', '/readyz'])
      assert.deepEqual(await probe(b.probePort ?? 0, path), {
        status: 200,
        text: 'ok\n',
        type: 'text/plain',
      });
    await a.stop();
    await until('b leads at once', () => b.leading(), 300);
    api.seed(CD_NS, {
      metadata: { name: 'job' },
      spec: { numNodes: 0, channel: { resourceClaimTemplate: { name: 'job-channel' } } },
    });
    await until('b reconciles', () =>
      (api.read<ComputeDomain>(domainPath('team', 'job'))?.metadata.finalizers ?? []).includes(FINALIZER),
    );
    await b.stop();
  });

  it('under a slow API server nothing of a term lands after its renew deadline', async () => {
    const store = new FakeObjects();
    for (let i = 0; i < 30; i++)
      store.seed(CD_NS, {
        metadata: { name: `job-${String(i)}` },
        spec: { numNodes: 0, channel: { resourceClaimTemplate: { name: `job-${String(i)}-channel` } } },
      });
    const api = new SlowServer(store, 60);
    const RENEW = 250;
    const r = await runComputeDomainController({
      ...served(store),
      api,
      leaderElection: {
        namespace: 'nvidia-dra-driver-gpu',
        name: 'fakegpu-compute-domain-controller',
        identity: 'a',
        leaseDurationMs: 400,
        renewDeadlineMs: RENEW,
        retryPeriodMs: 40,
      },
    });
    try {
      await until('a leads and writes', () => r.leading() && api.applied.length > 0);
      api.stallRenewals = true;
      const end = api.renewedAt + RENEW;
      await until('the term ends', () => !r.leading(), 2000);
      // Long enough for writes a pass still had to send (30 domains, 4 writes each, 60 ms apiece).
      await new Promise((res) => setTimeout(res, 1000));
      const late = api.applied
        .filter((w) => w.at > end)
        .map((w) => `${w.what} +${(w.at - end).toFixed(0)} ms`);
      assert.deepEqual(late, [], 'no write landed after the term');
    } finally {
      await r.stop();
    }
  });

  it('serves no probes without an endpoint', async () => {
    const r = await runComputeDomainController({
      api: new FakeObjects(),
      namespace: 'nvidia-dra-driver-gpu',
      image: 'daemon:1',
      httpEndpoint: '',
      log,
    });
    assert.equal(r.probePort, null);
    await r.stop();
  });
});
