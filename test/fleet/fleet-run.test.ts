import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { runFleet, type FleetRunOptions, type RunningFleet } from '../../src/fleet/run.js';
import { ApiError } from '../../src/kube/client.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { runUntilStopped } from '../../src/process/shutdown.js';
import { FakeApi } from '../support/fake-api.js';
import { FakeObjects } from '../support/fake-objects.js';
import { Link } from '../support/link.js';
import { SERVED } from '../support/fleet.js';
import { until } from '../support/http.js';
import { FakeHost, probe, takenEndpoint, unusedKubeconfig } from '../support/process.js';

const log = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'fakegpu-fleet-run-'));

function options(api: FakeApi, o: Partial<FleetRunOptions> = {}): FleetRunOptions {
  return {
    ...SERVED,
    kubeconfig: unusedKubeconfig(dir),
    requestTimeoutMs: 30_000,
    faults: false,
    httpEndpoint: '127.0.0.1:0',
    api,
    ...o,
  };
}

describe('fakegpu fleet, as its run module wires it', () => {
  it('publishes, answers its probes and metrics on the shared server, and stops on a signal', async () => {
    const api = new FakeApi();
    for (const n of ['node-0', 'node-1']) api.putNode(n, {}, { [KWOK_ANNOTATION]: 'fake' });
    const host = new FakeHost();
    let running: RunningFleet | undefined;
    const done = runUntilStopped(async () => (running = await runFleet(options(api))), { log, host });
    await until('started', () => running !== undefined);
    const port = running?.probePort;
    assert.ok(typeof port === 'number' && port > 0);
    assert.deepEqual(await probe(port, '/healthz'), { status: 200, text: 'ok\n', type: 'text/plain' });
    await until('published', () => api.slices.size === 2);
    let ready = await probe(port, '/readyz');
    for (let i = 0; ready.status !== 200 && i < 100; i++) {
      assert.equal(ready.status, 503);
      assert.match(ready.text, /^publishing( \d+\/2 nodes)?\n$/);
      await new Promise((r) => setTimeout(r, 20));
      ready = await probe(port, '/readyz');
    }
    assert.deepEqual(ready, { status: 200, text: 'ok\n', type: 'text/plain' });
    const metrics = (await probe(port, '/metrics')).text;
    assert.match(metrics, /^fakegpu_fleet_nodes 2$/m);
    assert.match(metrics, /^fakegpu_fleet_converged 1$/m);
    assert.match(metrics, /^fakegpu_fleet_faults_applied_total 0$/m);
    assert.match(metrics, /^fakegpu_fleet_process_cpu_seconds_total /m);
    host.emit('SIGINT');
    await done;
    await assert.rejects(probe(port, '/healthz'), 'the probe server is closed');
    assert.equal(api.openWatches, 0, 'the watches are stopped');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(host.exits, [undefined]);
  });

  it('an endpoint in use is one line, before the API server is asked anything', async () => {
    const taken = await takenEndpoint();
    const endpoint = taken.endpoint;
    const api = new FakeApi();
    try {
      await assert.rejects(runFleet(options(api, { httpEndpoint: endpoint })), {
        message: `--http-endpoint: cannot listen on "${endpoint}": the address is already in use (another process listens there)`,
      });
      assert.equal(api.calls.size, 0);
    } finally {
      await taken.close();
    }
  });

  it('a kubeconfig through a proxy is refused in one line', async () => {
    await assert.rejects(
      runFleet(
        options(new FakeApi(), { kubeconfig: unusedKubeconfig(dir, ', proxy-url: "http://127.0.0.1:3"') }),
      ),
      { message: '--kubeconfig: a cluster reached through proxy-url is not supported by the fleet' },
    );
  });

  it('is live at once while its first list waits for the API server, ready once published', async () => {
    const api = new FakeApi();
    api.putNode('node-0', {}, { [KWOK_ANNOTATION]: 'fake' });
    let down = true;
    for (let i = 0; i < 100; i++)
      api.before('listNodes', () => {
        if (down) throw new ApiError(503, 'listNodes: the API server is down');
      });
    // Before, the probes answered only once the first list was in: an outage longer than the liveness
    // probe's budget restarted the process into CrashLoopBackOff.
    const started = await Promise.race([
      runFleet(options(api)),
      new Promise<null>((r) =>
        setTimeout(() => {
          r(null);
        }, 1000),
      ),
    ]);
    assert.ok(started, 'runFleet returns before its first list succeeds');
    const port = started.probePort ?? 0;
    assert.deepEqual(await probe(port, '/healthz'), { status: 200, text: 'ok\n', type: 'text/plain' });
    assert.deepEqual(await probe(port, '/readyz'), { status: 503, text: 'publishing\n', type: 'text/plain' });
    assert.ok(api.count('listNodes') > 0 && api.slices.size === 0, 'the API server was asked, and failed');
    down = false;
    await until('published', () => api.slices.size === 1, 40_000);
    await until('ready', () => started.leading());
    let ready = await probe(port, '/readyz');
    for (let i = 0; ready.status !== 200 && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 20));
      ready = await probe(port, '/readyz');
    }
    assert.equal(ready.status, 200);
    await started.stop();
  });

  it('with leader election one replica writes; the standby is ready, writes nothing, and takes over on release', async () => {
    const leases = new FakeObjects();
    const election = (identity: string) => ({
      api: leases,
      namespace: 'fakegpu',
      name: 'fakegpu-fleet',
      identity,
      leaseDurationMs: 400,
      renewDeadlineMs: 250,
      retryPeriodMs: 40,
    });
    const apis = [new FakeApi(), new FakeApi()];
    for (const a of apis) a.putNode('node-0', {}, { [KWOK_ANNOTATION]: 'fake' });
    const first = await runFleet(options(apis[0] ?? new FakeApi(), { leaderElection: election('a') }));
    await until('a leads', () => first.leading());
    const second = await runFleet(options(apis[1] ?? new FakeApi(), { leaderElection: election('b') }));
    await until('a published', () => apis[0]?.slices.size === 1);
    await new Promise((r) => setTimeout(r, 600));
    assert.ok(!second.leading());
    assert.equal(apis[1]?.calls.size, 0, 'the standby asks the API server nothing');
    assert.deepEqual(await probe(second.probePort ?? 0, '/readyz'), {
      status: 200,
      text: 'ok\n',
      type: 'text/plain',
    });
    const stopped = performance.now();
    await first.stop();
    await until('b leads', () => second.leading(), 2000);
    assert.ok(performance.now() - stopped < 400, 'at once: the lease was released');
    await until('b published', () => apis[1]?.slices.size === 1);
    await second.stop();
  });

  it('says how many of its nodes are published while it is not ready', async () => {
    const api = new FakeApi();
    for (const n of ['node-0', 'node-1', 'node-2']) api.putNode(n, {}, { [KWOK_ANNOTATION]: 'fake' });
    let release = (): void => undefined;
    const held = new Promise<void>((r) => (release = r));
    // The third create waits: two nodes are published, one is not.
    let creates = 0;
    for (let i = 0; i < 3; i++) api.before('createSlice', () => (++creates === 3 ? held : undefined));
    const f = await runFleet(options(api, { concurrency: 1 }));
    try {
      await until('two published', () => api.slices.size === 2);
      assert.deepEqual(await probe(f.probePort ?? 0, '/readyz'), {
        status: 503,
        text: 'publishing 2/3 nodes\n',
        type: 'text/plain',
      });
      release();
      await until('three published', () => api.slices.size === 3);
    } finally {
      release();
      await f.stop();
    }
  });

  it('is not ready before its lease has answered, though it is not leading yet', async () => {
    // bench:sched and bench:faults read a fresh fleet ready before it had a node: a standby is ready, and
    // before its first attempt at the lease the fleet read as one.
    const leases = new FakeObjects();
    const link = new Link(leases);
    link.mode = 'hang';
    const api = new FakeApi();
    api.putNode('node-0', {}, { [KWOK_ANNOTATION]: 'fake' });
    const f = await runFleet(
      options(api, {
        leaderElection: {
          api: link,
          namespace: 'fakegpu',
          name: 'fakegpu-fleet',
          identity: 'a',
          leaseDurationMs: 400,
          renewDeadlineMs: 250,
          retryPeriodMs: 40,
        },
      }),
    );
    try {
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(!f.leading());
      assert.deepEqual(await probe(f.probePort ?? 0, '/readyz'), {
        status: 503,
        text: 'publishing\n',
        type: 'text/plain',
      });
      link.mode = 'up';
      await until('published', () => api.slices.size === 1, 5000);
      let ready = await probe(f.probePort ?? 0, '/readyz');
      for (let i = 0; ready.status !== 200 && i < 100; i++) {
        await new Promise((r) => setTimeout(r, 20));
        ready = await probe(f.probePort ?? 0, '/readyz');
      }
      assert.equal(ready.status, 200);
    } finally {
      await f.stop();
    }
  });

  it('a sharded replica joins the ring only once its first list is in, and then takes its shards', async () => {
    const leases = new FakeObjects();
    const api = new FakeApi();
    api.putNode('node-0', {}, { [KWOK_ANNOTATION]: 'fake' });
    let listed = (): void => undefined;
    api.before('listNodes', () => new Promise<void>((r) => (listed = r)));
    const r = await runFleet(
      options(api, {
        sharding: {
          api: leases,
          namespace: 'fakegpu',
          name: 'fakegpu-fleet',
          shards: 4,
          identity: () => 'a',
          leaseDurationMs: 400,
          renewDeadlineMs: 250,
          retryPeriodMs: 40,
        },
      }),
    );
    try {
      await until('the list is asked for', () => api.count('listNodes') === 1);
      await new Promise((res) => setTimeout(res, 500));
      assert.equal(r.leading(), false, 'no shard held while the nodes are not known');
      assert.deepEqual(
        await leases.list('/apis/coordination.k8s.io/v1/namespaces/fakegpu/leases'),
        [],
        'not even a member',
      );
      listed();
      await until('all four shards held', () => r.leading() && api.slices.size === 1, 5000);
    } finally {
      listed();
      await r.stop();
    }
  });

  it('serves no probes without an endpoint', async () => {
    const r = await runFleet(options(new FakeApi(), { httpEndpoint: '' }));
    assert.equal(r.probePort, null);
    await r.stop();
  });
});
