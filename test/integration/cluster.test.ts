import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { clusterDown, clusterStatus, clusterUp } from '../../src/local-cluster/cluster.js';
import { releaseOf } from '../../src/local-cluster/releases.js';
import { layout, PORTS } from '../../src/local-cluster/config.js';
import { isAlive } from '../../src/local-cluster/process.js';
import { KWOK_NODE_PREFIX, kwokNode } from '../../src/local-cluster/kwok-nodes.js';
import {
  eventually,
  kubectl,
  mustKubectl,
  nodeReady,
  TEST_CLUSTER_DIR,
  TEST_NODE,
  testCluster,
} from '../support/cluster.js';

describe('local cluster', () => {
  let e: Exports;
  before(async () => {
    e = await testCluster();
  });

  it('has a Ready node and every component running', () => {
    assert.ok(nodeReady(e, TEST_NODE));
    for (const c of clusterStatus(TEST_CLUSTER_DIR)) assert.ok(c.running, `${c.name} runs`);
  });

  it('serves the DRA API group resource.k8s.io/v1', () => {
    const out = mustKubectl(e, ['api-resources', '--api-group=resource.k8s.io', '-o', 'name']);
    for (const r of [
      'resourceslices.resource.k8s.io',
      'resourceclaims.resource.k8s.io',
      'deviceclasses.resource.k8s.io',
      'resourceclaimtemplates.resource.k8s.io',
    ]) {
      assert.ok(out.split('\n').includes(r), `${r} in ${out}`);
    }
    assert.match(mustKubectl(e, ['api-versions']), /^resource\.k8s\.io\/v1$/m);
  });

  it('runs a pod from the test image to completion', async () => {
    const name = `hello-${Date.now().toString(36)}`;
    mustKubectl(
      e,
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'default' },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'main',
              image: e.FAKEGPU_TEST_IMAGE,
              imagePullPolicy: 'Never',
              command: ['sh', '-c', 'echo hello from $(uname -s); ls /bin/sh'],
            },
          ],
        },
      }),
    );
    const phase = await eventually(
      'the pod to finish',
      () => {
        const p = kubectl(e, ['get', 'pod', name, '-o', 'jsonpath={.status.phase}']).out;
        return p === 'Succeeded' || p === 'Failed' ? p : undefined;
      },
      120_000,
    );
    assert.equal(phase, 'Succeeded', kubectl(e, ['describe', 'pod', name]).out);
    assert.equal(mustKubectl(e, ['logs', name]), 'hello from Linux\n/bin/sh\n');
    mustKubectl(e, ['delete', 'pod', name, '--wait=false']);
  });
});

describe('cluster up refuses what it cannot do', () => {
  before(async () => {
    await testCluster();
  });

  it('a running cluster is not silently reused for another node or another machine', async () => {
    await assert.rejects(
      clusterUp({
        dir: TEST_CLUSTER_DIR,
        nodeName: TEST_NODE,
        release: releaseOf('1.36', 'test'),
        log: () => undefined,
      }),
      {
        message: `--kubernetes-version: the cluster in ${TEST_CLUSTER_DIR} runs Kubernetes 1.37.2; run "fakegpu cluster down" first to change it`,
      },
    );
    await assert.rejects(
      clusterUp({ dir: TEST_CLUSTER_DIR, nodeName: 'someone-else', log: () => undefined }),
      {
        message: `--node-name: the cluster in ${TEST_CLUSTER_DIR} runs node "${TEST_NODE}"; run "fakegpu cluster down" first to change it`,
      },
    );
    await assert.rejects(
      clusterUp({ dir: TEST_CLUSTER_DIR, nodeName: TEST_NODE, profile: 'dgx-h100', log: () => undefined }),
      {
        message: `--profile: the cluster in ${TEST_CLUSTER_DIR} runs no node plugin; run "fakegpu cluster down" first to change it`,
      },
    );
    await assert.rejects(
      clusterUp({ dir: TEST_CLUSTER_DIR, nodeName: TEST_NODE, dynamicMig: true, log: () => undefined }),
      {
        message: `--dynamic-mig: the cluster in ${TEST_CLUSTER_DIR} runs without dynamic MIG; run "fakegpu cluster down" first to change it`,
      },
    );
    await assert.rejects(
      clusterUp({ dir: TEST_CLUSTER_DIR, nodeName: TEST_NODE, kwokNodes: 3, log: () => undefined }),
      {
        message: `--kwok-nodes: the cluster in ${TEST_CLUSTER_DIR} runs 0 KWOK node(s); run "fakegpu cluster down" first to change it`,
      },
    );
    await assert.rejects(
      clusterUp({ dir: TEST_CLUSTER_DIR, nodeName: TEST_NODE, with: ['kueue'], log: () => undefined }),
      {
        message: `--with: the cluster in ${TEST_CLUSTER_DIR} runs no --with project; run "fakegpu cluster down" first to change it`,
      },
    );
    await assert.rejects(
      clusterUp({ dir: TEST_CLUSTER_DIR, nodeName: TEST_NODE, helm: true, log: () => undefined }),
      {
        message: `--helm: the cluster in ${TEST_CLUSTER_DIR} runs fakegpu as host processes; run "fakegpu cluster down" first to change it`,
      },
    );
  });

  it('a second cluster on the same ports: names the port, starts nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-second-'));
    await assert.rejects(clusterUp({ dir, nodeName: 'second', log: () => undefined }), {
      message: /^cluster up: port 6443 \(apiserver\) on 127\.0\.0\.1 is already in use; /,
    });
    for (const c of clusterStatus(dir)) assert.equal(c.running, false, `${c.name} must not run`);
    for (const c of clusterStatus(TEST_CLUSTER_DIR))
      assert.ok(c.running, `the test cluster's ${c.name} still runs`);
  });
});

describe('cluster up after a crash', () => {
  it('finds a component dead, cleans up and brings every component back', async () => {
    const e = await testCluster();
    const scheduler = clusterStatus(TEST_CLUSTER_DIR).find((c) => c.name === 'kube-scheduler');
    assert.ok(scheduler?.pid);
    process.kill(scheduler.pid, 'SIGKILL');
    await eventually('the scheduler to die', () => (isAlive(scheduler.pid ?? 0) ? undefined : true));
    const lines: string[] = [];
    const again = await clusterUp({ dir: TEST_CLUSTER_DIR, nodeName: TEST_NODE, log: (l) => lines.push(l) });
    assert.ok(
      lines.includes('found a partly running or crashed cluster; cleaning it up first'),
      lines.join('\n'),
    );
    assert.equal(again.KUBECONFIG, e.KUBECONFIG);
    for (const c of clusterStatus(TEST_CLUSTER_DIR)) assert.ok(c.running, `${c.name} runs again`);
    assert.ok(nodeReady(e, TEST_NODE));
  });
});

/** Any thread of the process still runs: a zombie leader whose other threads still exit holds its ports. */
function runs(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/task`).some((t) => {
      try {
        const s = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
        return !/^[ZX]/.test(s.slice(s.lastIndexOf(')') + 2));
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

/** The cluster's processes: those of its pid files, and any whose command line names its directory (shims). */
function clusterPids(dir: string): number[] {
  const run = layout(dir).run;
  const fromFiles = readdirSync(run)
    .filter((f) => f.endsWith('.pid'))
    .map((f) => Number(readFileSync(join(run, f), 'utf8').trim()));
  const naming = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
  return [...new Set([...fromFiles, ...naming])];
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (e: NodeJS.ErrnoException) => {
      resolve(e.code === 'ECONNREFUSED');
    });
  });
}

// Stops the shared cluster and starts it again, so it can run anywhere in the suite: last in this file,
// as the tests above expect the processes they started with.
describe('cluster down', () => {
  it('returns once every process has exited and its ports are closed, so up can follow at once, and that up removes KWOK nodes an earlier run left', async () => {
    const e = await testCluster();
    // A node a `--kwok-nodes` run left in the etcd data the directory keeps: the next up removes it
    // (one drew a GPU pod away from the test node in CI).
    const stale = `${KWOK_NODE_PREFIX}3`;
    mustKubectl(e, ['apply', '-f', '-'], JSON.stringify(kwokNode({ name: stale, labels: {}, taints: [] })));
    const pids = clusterPids(TEST_CLUSTER_DIR);
    assert.ok(pids.filter(runs).length >= 6, `the cluster's processes: ${pids.join(', ')}`);

    await clusterDown({ dir: TEST_CLUSTER_DIR, purge: false, log: () => undefined });
    assert.deepEqual(pids.filter(runs), [], 'no process of the cluster runs after down returned');
    for (const [name, port] of Object.entries(PORTS))
      assert.ok(await refuses(port), `port ${port} (${name}) refuses connections after down returned`);

    // What the defect broke: an up right after down found the ports still held.
    await clusterUp({ dir: TEST_CLUSTER_DIR, nodeName: TEST_NODE, log: () => undefined });
    for (const c of clusterStatus(TEST_CLUSTER_DIR)) assert.ok(c.running, `${c.name} runs again`);
    assert.ok(nodeReady(e, TEST_NODE));
    await eventually(`${stale} removed`, () =>
      kubectl(e, ['get', 'node', stale]).err.includes('NotFound') ? true : undefined,
    );
  });
});
