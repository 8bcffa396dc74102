import assert from 'node:assert/strict';
import { get } from 'node:http';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { before, describe, it } from 'node:test';
import { PooledKubeConfig } from '../../src/kube/client.js';
import { pino } from 'pino';
import { cacheRoot } from '../../src/local-cluster/build.js';
import {
  clusterRestart,
  FLEET_HTTP,
  kwokNode,
  PROFILE_LABEL,
  type Exports,
} from '../../src/local-cluster/cluster.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { Fleet } from '../../src/fleet/fleet.js';
import { runFleet } from '../../src/fleet/run.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { layout } from '../../src/local-cluster/config.js';
import { readPid } from '../../src/local-cluster/process.js';
import { stopComponent } from '../../src/local-cluster/stop.js';
import { parsePools } from '../../src/fleet/pools.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { eventually, kubectl, mustKubectl, sharedCluster } from '../support/cluster.js';
import { render } from '../support/render.js';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * fakegpu fleet on KWOK's simulated nodes: `cluster up --kwok-nodes 50` creates 50 DGX H100 nodes; the
 * tests relabel half of them as AWS p4d, delete and add nodes, run pods with claims on them, restart the
 * fleet, and check the slices against what `render` gives for each node.
 */
const DIR = process.env['FAKEGPU_FLEET_CLUSTER_DIR'] ?? join(cacheRoot(), 'fleet-cluster');
const NODES = 50;
const log = (l: string): void => {
  process.stderr.write(`fakegpu: ${l}\n`);
};
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

/** A GET's body. */
function text(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        resolve(body);
      });
    }).on('error', reject);
  });
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
    await sleep(500);
  }
}

/** The notes of the fleet's FakegpuProfileInvalid events on a node; undefined while there are none. */
function invalidProfileNotes(e: Exports, node: string): string | undefined {
  const out = kubectl(e, [
    'get',
    'events.events.k8s.io',
    `--field-selector=reason=FakegpuProfileInvalid,regarding.name=${node}`,
    '-o',
    'jsonpath={.items[*].note}',
  ]).out;
  return out || undefined;
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
      // Their GPUs report what the annotation says in the fleet's dcgm-exporter metrics.
      metadata: {
        name: `kwok-pod-${i}`,
        namespace: 'default',
        annotations: { 'fakegpu.dev/gpu-util': '37' },
      },
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
    // dcgm-exporter's view of the fleet: every node's 8 GPUs, and each pod's GPU at its annotated load
    // with its pod and claim labels, on the node its claim was allocated on.
    const claims = JSON.parse(mustKubectl(e, ['get', 'resourceclaims', '-o', 'json'])) as {
      items: {
        metadata: { name: string };
        status: { allocation: { devices: { results: { pool: string; device: string }[] } } };
      }[];
    };
    let util: string[];
    const deadline = Date.now() + 30_000;
    for (;;) {
      const lines = (await text(e.FAKEGPU_FLEET_DCGM_URL ?? '')).split('\n');
      util = lines.filter((l) => l.startsWith('DCGM_FI_DEV_GPU_UTIL{'));
      if (util.filter((l) => l.includes(',pod="kwok-pod-')).length === 10) break;
      assert.ok(Date.now() < deadline, `the pods' GPUs in the fleet's metrics:\n${util.join('\n')}`);
      await sleep(500);
    }
    assert.equal(util.length, NODES * 8);
    for (const c of claims.items) {
      const r = c.status.allocation.devices.results[0];
      assert.ok(r);
      const line = util.find((l) => l.includes(`dra_claim_name="${c.metadata.name}"`));
      assert.ok(line, c.metadata.name);
      assert.ok(line.includes(`hostname="${r.pool}"`), line);
      assert.ok(line.includes(`dra_device_name="${r.device}",dra_driver_name="gpu.nvidia.com"`), line);
      assert.match(line, /,container="main",/);
      assert.match(line, /\} 37$/);
    }
    mustKubectl(e, ['delete', 'pods', '--all', '--wait=true']);
  });

  it('deletes the slices of a deleted node, and publishes a new node', async () => {
    mustKubectl(e, ['delete', 'node', 'kwok-gpu-0']);
    await eventually('kwok-gpu-0 slices gone', () => (slicesByNode(e).has('kwok-gpu-0') ? undefined : true));
    mustKubectl(
      e,
      ['apply', '-f', '-'],
      JSON.stringify(kwokNode({ name: 'kwok-gpu-0', labels: { [PROFILE_LABEL]: 'dgx-h100' }, taints: [] })),
    );
    await eventually('kwok-gpu-0 published again', () =>
      matches(e, (n) => (p4d(n) ? 'aws-p4d.24xlarge' : 'dgx-h100')).length === 0 ? true : undefined,
    );
  });

  it('puts back a slice someone else deleted, and one someone else changed', async () => {
    const profile = (n: string): string => (p4d(n) ? 'aws-p4d.24xlarge' : 'dgx-h100');
    const [gone] = slicesByNode(e).get('kwok-gpu-4') ?? [];
    const [changed] = slicesByNode(e).get('kwok-gpu-6') ?? [];
    assert.ok(gone && changed);
    mustKubectl(e, ['delete', 'resourceslice', gone.metadata.name]);
    // A device attribute another controller rewrote: the spec differs, the node and owner do not.
    mustKubectl(e, [
      'patch',
      'resourceslice',
      changed.metadata.name,
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'replace', path: '/spec/devices/0/attributes/productName', value: { string: 'not a GPU' } },
      ]),
    ]);
    await eventually('both slices as render gives them again', () =>
      matches(e, profile).length === 0 ? true : undefined,
    );
  });

  it('records an event on a node whose label names an unknown preset, leaving the others alone', async () => {
    mustKubectl(e, ['label', 'node', 'kwok-gpu-2', 'fakegpu.dev/profile=dgx-h999', '--overwrite']);
    const note = await eventually('a FakegpuProfileInvalid event', () =>
      invalidProfileNotes(e, 'kwok-gpu-2'),
    );
    assert.match(note, /unknown preset "dgx-h999"|dgx-h999/);
    assert.ok(slicesByNode(e).has('kwok-gpu-4'));
    mustKubectl(e, ['label', 'node', 'kwok-gpu-2', 'fakegpu.dev/profile=dgx-h100', '--overwrite']);
  });

  it('gives nodes of a pool the pool’s machine, from a pools file, and an event for an unknown pool', async () => {
    // KWOK nodes that a second fleet in this process serves by selector, as a user's would; the
    // cluster's own fleet, which would serve them too, is stopped meanwhile (one writer per node).
    await stopComponent(layout(DIR), 'fakegpu-fleet', log);
    const kc = new PooledKubeConfig(4);
    kc.loadFromFile(e.KUBECONFIG);
    const pools = parsePools(
      'apiVersion: fakegpu.dev/v1alpha1\nkind: FleetPools\npoolLabel: example.com/pool\npools:\n' +
        '  h100: { profile: dgx-h100 }\n  a100-mig: { profile: dgx-a100, dynamicMig: true }\n',
      'test pools',
    );
    const node = (name: string, pool: string): string =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name,
          labels: { 'fakegpu.dev/pool-test': 'yes', 'example.com/pool': pool },
          annotations: { [KWOK_ANNOTATION]: 'fake' },
        },
      });
    for (const [name, pool] of [
      ['pool-node-0', 'h100'],
      ['pool-node-1', 'a100-mig'],
      ['pool-node-2', 'b300'],
    ] as const)
      mustKubectl(e, ['apply', '-f', '-'], node(name, pool));
    const fleet = new Fleet(kc, {
      nodeSelector: 'fakegpu.dev/pool-test=yes',
      // Its own profile label: the cluster's fleet serves every node with fakegpu.dev/profile.
      profileLabel: 'example.com/profile',
      pools,
      dynamicMig: false,
      driverName: 'gpu.nvidia.com',
      release: DEFAULT_RELEASE,
      concurrency: 4,
      qps: 0,
      burst: 1,
      log: pino({ level: 'silent' }),
    });
    const specsOf = (n: string): ResourceSlice['spec'][] =>
      (slicesByNode(e).get(n) ?? []).map((x) => ({ ...x.spec, pool: { ...x.spec.pool, generation: 1 } }));
    const want = (n: string, profile: string, dynamicMig: boolean): ResourceSlice['spec'][] =>
      render(profile, { node: n, dynamicMig }).items.map((x) => x.spec);
    try {
      await fleet.start();
      await until('the pool nodes published', () => Promise.resolve(fleet.converged()));
      assert.deepEqual(specsOf('pool-node-0'), want('pool-node-0', 'dgx-h100', false));
      assert.deepEqual(specsOf('pool-node-1'), want('pool-node-1', 'dgx-a100', true));
      assert.deepEqual(specsOf('pool-node-2'), []);
      const note = await eventually('an event for the unknown pool', () =>
        invalidProfileNotes(e, 'pool-node-2'),
      );
      assert.match(note, /unknown pool "b300"; pools: h100, a100-mig/);
      // The node's own profile label wins over its pool.
      mustKubectl(e, ['label', 'node', 'pool-node-1', 'example.com/profile=aws-p4d.24xlarge']);
      await until('pool-node-1 relabelled', () =>
        Promise.resolve(
          fleet.converged() &&
            isDeepStrictEqual(specsOf('pool-node-1'), want('pool-node-1', 'aws-p4d.24xlarge', false)),
        ),
      );
    } finally {
      await fleet.stop();
      mustKubectl(e, ['delete', 'node', 'pool-node-0', 'pool-node-1', 'pool-node-2']);
      await clusterRestart(DIR, 'fakegpu-fleet', log);
    }
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

  it('two fleets on the same nodes: the standby writes nothing; the leader killed, it leads within the lease duration', async () => {
    await until('converged', async () => (await metric('fakegpu_fleet_converged')) === 1);
    const holder = (): string =>
      kubectl(e, [
        '-n',
        'kube-system',
        'get',
        'lease',
        'fakegpu-fleet',
        '-o',
        'jsonpath={.spec.holderIdentity}',
      ]).out.trim();
    assert.notEqual(holder(), '', "the cluster's fleet holds the lease");
    const versions = (): string[] =>
      [...slicesByNode(e).values()]
        .flat()
        .map(
          (s) => `${s.metadata.name}@${String((s.metadata as { resourceVersion?: string }).resourceVersion)}`,
        )
        .sort();
    const before = versions();
    // Another machine than the leader's: had it written, the slices would change (and flap).
    const standby = await runFleet({
      kubeconfig: e.KUBECONFIG,
      requestTimeoutMs: 30_000,
      faults: false,
      httpEndpoint: '',
      // A label no node has: every node is a B200 to it, unlike to the leader.
      profileLabel: 'example.com/standby-profile',
      defaultProfile: 'dgx-b200',
      dynamicMig: false,
      driverName: 'gpu.nvidia.com',
      release: DEFAULT_RELEASE,
      concurrency: 4,
      qps: 0,
      burst: 1,
      log: pino({ level: 'silent' }),
      leaderElection: { namespace: 'kube-system', name: 'fakegpu-fleet', identity: 'integration-standby' },
    });
    try {
      await sleep(6000);
      assert.ok(!standby.leading(), 'it stands by');
      assert.deepEqual(versions(), before, 'no slice was written meanwhile');
      const pid = readPid(layout(DIR).run, 'fakegpu-fleet');
      assert.ok(pid !== null);
      process.kill(pid, 'SIGKILL'); // no release: the standby must wait out the lease
      const killed = performance.now();
      await until('the standby leads', () => Promise.resolve(standby.leading()), 30_000);
      const waited = performance.now() - killed;
      assert.ok(
        waited >= 9_000 && waited <= 15_000 + 2 * 2_000 + 2_000,
        `took over after ${String(waited)} ms`,
      );
      assert.equal(holder(), 'integration-standby');
      const b200 = render('dgx-b200', { node: 'kwok-gpu-0' }).items.map((x) => x.spec);
      await until('the standby writes', () =>
        Promise.resolve(
          isDeepStrictEqual(
            (slicesByNode(e).get('kwok-gpu-0') ?? []).map((x) => ({
              ...x.spec,
              pool: { ...x.spec.pool, generation: 1 },
            })),
            b200,
          ),
        ),
      );
    } finally {
      await standby.stop();
      await clusterRestart(DIR, 'fakegpu-fleet', log);
    }
    assert.equal(holder() === 'integration-standby', false, 'released on stop, taken by the restarted fleet');
  });
});
