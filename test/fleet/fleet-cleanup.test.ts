import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { COMPUTE_DOMAIN_DRIVER } from '../../src/model/compute-domain/slice.js';
import { FakegpuError } from '../../src/errors.js';
import { deleteFleetSlices, type CleanupOptions } from '../../src/fleet/cleanup.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { FakeApi } from '../support/fake-api.js';
import { FakeObjects } from '../support/fake-objects.js';
import { testFleet } from '../support/fleet.js';
import { until } from '../support/http.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/** `fleet --delete-slices` against an in-memory API server, and once through the binary. */
const KWOK = { [KWOK_ANNOTATION]: 'fake' };
const PROFILE_LABEL = 'fakegpu.dev/profile';
const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');

/** A slice as a publisher leaves it: the fleet, a real node's own plugin, another driver. */
function putSlice(api: FakeApi, name: string, node: string, driver = DRIVER_NAME): void {
  api.slices.set(name, {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name, resourceVersion: '1' },
    spec: { driver, nodeName: node, pool: { name: node, generation: 1, resourceSliceCount: 1 } },
  });
}

function cleanup(api: FakeApi, o: Partial<CleanupOptions> = {}): ReturnType<typeof deleteFleetSlices> {
  return deleteFleetSlices({
    api,
    driverName: DRIVER_NAME,
    computeDomains: false,
    concurrency: 4,
    ...o,
  });
}

const driversOf = (api: FakeApi): string[] => [...api.slices.values()].map((s) => s.spec.driver).sort();

describe('fleet --delete-slices', () => {
  it("deletes what the fleet published, under each of its drivers, and leaves a real node's plugin alone, labelled or not", async () => {
    const api = new FakeApi();
    api.putNode('kwok-h100', {}, KWOK);
    api.putNode('kwok-gb200', { [PROFILE_LABEL]: 'oci-bm.gpu.gb200.4' }, KWOK);
    api.putNode('labelled', { [PROFILE_LABEL]: 'dgx-h100' });
    api.putNode('real', { 'fakegpu.dev/enabled': 'true' });
    putSlice(api, 'real-gpu', 'real');
    putSlice(api, 'real-cd', 'real', COMPUTE_DOMAIN_DRIVER);
    // The profile label is also the plugin's per-node override: a node that is not KWOK's is never the fleet's.
    putSlice(api, 'labelled-gpu', 'labelled');
    putSlice(api, 'kwok-other', 'kwok-h100', 'other.example.com');
    const nics = { driverName: DRANET, standardNumaNode: false };
    const fleet = testFleet(api, {
      nics,
      computeDomains: { namespace: 'fakegpu', api: new FakeObjects(), periodMs: 60_000 },
    });
    await fleet.start();
    await until('published', () => fleet.converged() && api.slices.size > 3);
    await fleet.stop();
    const published = api.slices.size - 4;
    // Else the test would not show that each driver is swept.
    assert.deepEqual(
      [...new Set(driversOf(api))],
      [COMPUTE_DOMAIN_DRIVER, DRANET, DRIVER_NAME, 'other.example.com'].sort(),
    );

    const done = await cleanup(api, { nics, computeDomains: true });
    assert.deepEqual(done, { nodes: 2, deleted: published });
    assert.deepEqual([...api.slices.keys()].sort(), ['kwok-other', 'labelled-gpu', 'real-cd', 'real-gpu']);
  });

  it('leaves the drivers the fleet does not write, and with --node-selector only the KWOK nodes it selects', async () => {
    const api = new FakeApi();
    api.putNode('a', { pool: 'x' }, KWOK);
    api.putNode('b', {}, KWOK);
    api.putNode('c', { pool: 'x' }); // selected, but not KWOK's: it may run the plugin
    for (const n of ['a', 'b', 'c']) {
      putSlice(api, `${n}-gpu`, n);
      putSlice(api, `${n}-nic`, n, DRANET);
    }
    const done = await cleanup(api, { nodeSelector: 'pool=x' });
    assert.deepEqual(done, { nodes: 1, deleted: 1 });
    assert.deepEqual([...api.slices.keys()].sort(), ['a-nic', 'b-gpu', 'b-nic', 'c-gpu', 'c-nic']);
  });

  it('pages through the lists and takes a slice already gone (404) as deleted', async () => {
    const api = new FakeApi();
    for (let i = 0; i < 600; i++) {
      api.putNode(`n-${i}`, {}, KWOK);
      putSlice(api, `s-${i}`, `n-${i}`);
    }
    // Deleted under it, as its node's garbage collection would: the delete answers 404.
    api.before('deleteSlice', () => {
      api.removeSlice('s-0');
    });
    const done = await cleanup(api, { concurrency: 1 });
    assert.deepEqual(done, { nodes: 600, deleted: 599 });
    assert.equal(api.slices.size, 0);
    assert.equal(api.count('listNodes'), 2);
    assert.equal(api.count('listSlices'), 2);
  });

  it('ends on the first failure with one line naming the flag and the request', async () => {
    const api = new FakeApi();
    api.putNode('n', {}, KWOK);
    putSlice(api, 's', 'n');
    api.fail('listNodes', 1, 403);
    await assert.rejects(cleanup(api), (e: unknown) => {
      assert.ok(e instanceof FakegpuError);
      assert.equal(e.message, '--delete-slices: listing nodes: listNodes: injected HTTP 403');
      return true;
    });
    api.fail('deleteSlice', 1, 500);
    await assert.rejects(cleanup(api), /^FakegpuError: --delete-slices: deleting ResourceSlice s: /);
    assert.equal(api.slices.size, 1);
  });
});

describe('fakegpu fleet --delete-slices (the binary)', () => {
  const run = promisify(execFile);

  it('deletes the slices over HTTP, logs one line with the count and exits 0', async () => {
    const deleted: string[] = [];
    const list = (items: object[]): string => JSON.stringify({ metadata: { resourceVersion: '1' }, items });
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '', 'http://x');
      if (req.method === 'GET' && url.pathname === '/api/v1/nodes')
        res.end(list([{ metadata: { name: 'kwok-0', annotations: KWOK } }, { metadata: { name: 'real' } }]));
      else if (req.method === 'GET' && url.pathname === '/apis/resource.k8s.io/v1/resourceslices')
        res.end(
          list(
            url.searchParams.get('fieldSelector') === `spec.driver=${DRIVER_NAME}`
              ? [
                  { metadata: { name: 'kwok-0-gpu' }, spec: { driver: DRIVER_NAME, nodeName: 'kwok-0' } },
                  { metadata: { name: 'real-gpu' }, spec: { driver: DRIVER_NAME, nodeName: 'real' } },
                ]
              : [],
          ),
        );
      else if (
        req.method === 'DELETE' &&
        url.pathname.startsWith('/apis/resource.k8s.io/v1/resourceslices/')
      ) {
        deleted.push(url.pathname.split('/').pop() ?? '');
        res.end('{}');
      } else res.writeHead(404).end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cleanup-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      const server_ = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      writeFileSync(
        kubeconfig,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'c', cluster: { server: server_, 'insecure-skip-tls-verify': true } }],
          users: [{ name: 'u', user: { token: 't' } }],
          contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
          'current-context': 'x',
        }),
      );
      // From the environment, as the chart's hook sets it.
      const r = await run(process.execPath, [bin, 'fleet', '--kubeconfig', kubeconfig], {
        env: { ...process.env, FAKEGPU_FLEET_DELETE_SLICES: 'true', FAKEGPU_NO_COMPUTE_DOMAINS: 'true' },
        timeout: 30_000,
      });
      assert.equal(r.stdout, '');
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      const line = JSON.parse(lines[0] ?? '') as { msg: string; nodes: number; deleted: number };
      assert.deepEqual([line.msg, line.nodes, line.deleted], ["deleted the fleet's slices", 1, 1]);
      assert.deepEqual(deleted, ['kwok-0-gpu']);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a kubeconfig it cannot read in one line, exit 1, no stack trace', async () => {
    await assert.rejects(
      run(process.execPath, [bin, 'fleet', '--delete-slices', '--kubeconfig', '/nope'], { timeout: 30_000 }),
      (e: { code?: number; stdout?: string; stderr?: string }) => {
        assert.deepEqual(
          [e.code, e.stdout, e.stderr],
          [1, '', 'fakegpu: --kubeconfig: cannot read kubeconfig "/nope" (ENOENT)\n'],
        );
        return true;
      },
    );
  });
});
