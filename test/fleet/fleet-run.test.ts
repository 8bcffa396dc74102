import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { runFleet, type FleetRunOptions, type RunningFleet } from '../../src/fleet/run.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { runUntilStopped } from '../../src/process/shutdown.js';
import { FakeApi } from '../support/fake-api.js';
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
      assert.deepEqual(ready, { status: 503, text: 'publishing\n', type: 'text/plain' });
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

  it('serves no probes without an endpoint', async () => {
    const r = await runFleet(options(new FakeApi(), { httpEndpoint: '' }));
    assert.equal(r.probePort, null);
    await r.stop();
  });
});
