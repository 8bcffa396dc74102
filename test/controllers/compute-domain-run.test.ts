import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import {
  runComputeDomainController,
  type RunningController,
} from '../../src/controllers/compute-domain/run.js';
import { domainPath, FINALIZER, type ComputeDomain } from '../../src/model/compute-domain/resource.js';
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
