import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { runFleet, type FleetRunOptions, type RunningFleet } from '../../src/fleet/run.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { runUntilStopped } from '../../src/process/shutdown.js';
import { FakeApi } from '../support/fake-api.js';
import { until } from '../support/http.js';
import { FakeHost, probe } from '../support/process.js';

const log = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'fakegpu-fleet-run-'));

/** A kubeconfig the fleet loads and never uses: the API server is the in-memory one. */
function kubeconfig(extra = ''): string {
  const p = join(dir, `kubeconfig-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    p,
    `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"${extra}}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
  );
  return p;
}

function options(api: FakeApi, o: Partial<FleetRunOptions> = {}): FleetRunOptions {
  return {
    profileLabel: 'fakegpu.dev/profile',
    defaultProfile: 'dgx-h100',
    dynamicMig: false,
    driverName: DRIVER_NAME,
    release: DEFAULT_RELEASE,
    concurrency: 2,
    qps: 0,
    burst: 1,
    kubeconfig: kubeconfig(),
    requestTimeoutMs: 30_000,
    faults: false,
    httpEndpoint: '127.0.0.1:0',
    log,
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
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const address = taken.address();
    assert.ok(address && typeof address === 'object');
    const endpoint = `127.0.0.1:${address.port}`;
    const api = new FakeApi();
    try {
      await assert.rejects(runFleet(options(api, { httpEndpoint: endpoint })), {
        message: `--http-endpoint: cannot listen on "${endpoint}": the address is already in use (another process listens there)`,
      });
      assert.equal(api.calls.size, 0);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('a kubeconfig through a proxy is refused in one line', async () => {
    await assert.rejects(
      runFleet(options(new FakeApi(), { kubeconfig: kubeconfig(', proxy-url: "http://127.0.0.1:3"') })),
      { message: '--kubeconfig: a cluster reached through proxy-url is not supported by the fleet' },
    );
  });

  it('serves no probes without an endpoint', async () => {
    const r = await runFleet(options(new FakeApi(), { httpEndpoint: '' }));
    assert.equal(r.probePort, null);
    await r.stop();
  });
});
