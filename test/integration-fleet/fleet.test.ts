import assert from 'node:assert/strict';
import { get } from 'node:http';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { cacheRoot } from '../../src/cluster/build.js';
import { clusterRestart, FLEET_HTTP, kwokNode, type Exports } from '../../src/cluster/cluster.js';
import type { ResourceSlice } from '../../src/k8s/resource.js';
import { eventually, kubectl, mustKubectl, sharedCluster } from '../support/cluster.js';
import { render } from '../support/render.js';

/**
 * fakegpu fleet on KWOK's simulated nodes: `cluster up --kwok-nodes 50` creates 50 DGX H100 nodes; the
 * tests relabel half of them as AWS p4d, delete and add nodes, run pods with claims on them, restart the
 * fleet, and check the slices against what `render` gives for each node.
 */
const DIR = process.env['FAKEGPU_FLEET_CLUSTER_DIR'] ?? join(cacheRoot(), 'fleet-cluster');
const NODES = 50;
const fleetCluster = (): Promise<Exports> =>
  sharedCluster({ dir: DIR, nodeName: 'fakegpu-fleet-host', kwokNodes: NODES, kwokProfile: 'dgx-h100' });

type Stored = ResourceSlice & { metadata: { name: string } };

function slicesByNode(e: Exports): Map<string, Stored[]> {
  const list = JSON.parse(
    mustKubectl(e, ['get', 'resourceslices', '--field-selector=spec.driver=gpu.nvidia.com', '-o', 'json']),
  ) as { items: Stored[] };
  const m = new Map<string, Stored[]>();
  for (const s of list.items) m.set(s.spec.nodeName, [...(m.get(s.spec.nodeName) ?? []), s]);
  return m;
}

/** Each node's published specs equal render's for its profile, generation aside. */
function matches(e: Exports, profileOf: (node: string) => string): string[] {
  const bad: string[] = [];
  const byNode = slicesByNode(e);
  for (let i = 0; i < NODES; i++) {
    const node = `kwok-gpu-${i}`;
    const want = render(profileOf(node), { node }).items.map((s) => s.spec);
    const got = (byNode.get(node) ?? []).map((s) => ({ ...s.spec, pool: { ...s.spec.pool, generation: 1 } }));
    try {
      assert.deepEqual(got, want);
    } catch {
      bad.push(node);
    }
  }
  return bad;
}

function metric(name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(`http://${FLEET_HTTP}/metrics`, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(body);
        if (m) resolve(Number(m[1]));
        else reject(new Error(`no ${name} in /metrics`));
      });
    }).on('error', reject);
  });
}

/** Polls an async check, as `eventually` does a synchronous one. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const p4d = (node: string): boolean => Number(node.slice('kwok-gpu-'.length)) % 2 === 1;

describe('fakegpu fleet on 50 KWOK nodes', () => {
  let e: Exports;
  before(async () => {
    e = await fleetCluster();
  });

  it('publishes every node, and replaces the slices of nodes relabelled to another preset', async () => {
    assert.deepEqual(
      await eventually('50 DGX H100 nodes published', () =>
        matches(e, () => 'dgx-h100').length === 0 ? [] : undefined,
      ),
      [],
    );
    const odd = Array.from({ length: NODES / 2 }, (_, k) => `kwok-gpu-${2 * k + 1}`);
    mustKubectl(e, ['label', 'node', ...odd, 'fakegpu.dev/profile=aws-p4d.24xlarge', '--overwrite']);
    const profile = (n: string): string => (p4d(n) ? 'aws-p4d.24xlarge' : 'dgx-h100');
    await eventually('25 nodes republished as p4d', () =>
      matches(e, profile).length === 0 ? true : undefined,
    );
    const names = [...slicesByNode(e).values()].flat().map((s) => s.metadata.name);
    assert.equal(new Set(names).size, names.length);
    assert.equal(names.length, NODES, 'one slice per node, no duplicates left behind');
  });

  it('runs pods with GPU claims on KWOK nodes', async () => {
    const claim = {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 'one-gpu', namespace: 'default' },
      spec: {
        spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.nvidia.com' } }] } },
      },
    };
    mustKubectl(e, ['apply', '-f', '-'], JSON.stringify(claim));
    const pods = Array.from({ length: 10 }, (_, i) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `kwok-pod-${i}`, namespace: 'default' },
      spec: {
        nodeSelector: { type: 'kwok' },
        tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
        resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'one-gpu' }],
        containers: [{ name: 'main', image: 'fake', resources: { claims: [{ name: 'gpu' }] } }],
      },
    }));
    mustKubectl(e, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: pods }));
    await eventually(
      '10 pods Running',
      () => {
        const phases = kubectl(e, ['get', 'pods', '-o', 'jsonpath={.items[*].status.phase}']).out.split(' ');
        return phases.filter((p) => p === 'Running').length === 10 ? true : undefined;
      },
      120_000,
    );
    const allocated = kubectl(e, [
      'get',
      'resourceclaims',
      '-o',
      'jsonpath={.items[*].status.allocation.devices.results[0].pool}',
    ]).out;
    assert.ok(
      allocated.split(' ').every((pool) => pool.startsWith('kwok-gpu-')),
      allocated,
    );
    mustKubectl(e, ['delete', 'pods', '--all', '--wait=true']);
  });

  it('deletes the slices of a deleted node, and publishes a new node', async () => {
    mustKubectl(e, ['delete', 'node', 'kwok-gpu-0']);
    await eventually('kwok-gpu-0 slices gone', () => (slicesByNode(e).has('kwok-gpu-0') ? undefined : true));
    mustKubectl(e, ['apply', '-f', '-'], JSON.stringify(kwokNode(0, 'dgx-h100')));
    await eventually('kwok-gpu-0 published again', () =>
      matches(e, (n) => (p4d(n) ? 'aws-p4d.24xlarge' : 'dgx-h100')).length === 0 ? true : undefined,
    );
  });

  it('records an event on a node whose label names an unknown preset, leaving the others alone', async () => {
    mustKubectl(e, ['label', 'node', 'kwok-gpu-2', 'fakegpu.dev/profile=dgx-h999', '--overwrite']);
    const note = await eventually('a FakegpuProfileInvalid event', () => {
      const out = kubectl(e, [
        'get',
        'events.events.k8s.io',
        '--field-selector=reason=FakegpuProfileInvalid,regarding.name=kwok-gpu-2',
        '-o',
        'jsonpath={.items[*].note}',
      ]).out;
      return out || undefined;
    });
    assert.match(note, /unknown preset "dgx-h999"|dgx-h999/);
    assert.ok(slicesByNode(e).has('kwok-gpu-4'));
    mustKubectl(e, ['label', 'node', 'kwok-gpu-2', 'fakegpu.dev/profile=dgx-h100', '--overwrite']);
  });

  it('makes no writes after a restart when nothing changed', async () => {
    await until('converged', async () => (await metric('fakegpu_fleet_converged')) === 1);
    const before = slicesByNode(e);
    await clusterRestart(DIR, 'fakegpu-fleet', (l) => process.stderr.write(`fakegpu: ${l}\n`));
    await until('converged after restart', async () => (await metric('fakegpu_fleet_converged')) === 1);
    assert.equal(await metric('fakegpu_fleet_writes'), 0);
    const after = slicesByNode(e);
    assert.deepEqual(
      [...after.values()]
        .flat()
        .map((s) => s.metadata.name)
        .sort(),
      [...before.values()]
        .flat()
        .map((s) => s.metadata.name)
        .sort(),
    );
  });
});
