import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { KUEUE_GPU_RESOURCE } from '../../src/local-cluster/kueue-process.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import { apply, claimTemplate, deviceRequest } from '../support/e2e.js';
import { integrationsCluster, queuedJob } from '../support/integrations.js';

/**
 * Kueue, built from its module, holds GPU quota in DRA devices: a ClusterQueue of 64 `gpu.nvidia.com`
 * devices admits eight jobs of 8 GPUs, each a ResourceClaimTemplate, and holds the ninth until one of the
 * eight finishes; the jobs run on KWOK DGX H100s whose slices the fleet publishes.
 */

const QUEUE = 'gpus';
const CLUSTER_QUEUE = 'gpu-cluster-queue';
const JOBS = 9;
/** Job 0 finishes after this long (KWOK completes Job pods after their `delay` annotation); the rest run on. */
const FIRST_RUNS_FOR = '40s';

interface Job {
  metadata: { name: string };
  spec: { suspend?: boolean };
  status?: { succeeded?: number };
}

interface Workload {
  metadata: { ownerReferences?: { name: string }[] };
  status?: { conditions?: { type: string; status: string; message?: string }[] };
}

function job(i: number): unknown {
  return queuedJob({
    name: `train-${i}`,
    queue: QUEUE,
    template: 'eight-h100',
    runFor: i === 0 ? FIRST_RUNS_FOR : '24h',
    pod: {
      spec: {
        nodeSelector: { type: 'kwok' },
        tolerations: [{ key: KWOK_ANNOTATION, operator: 'Exists', effect: 'NoSchedule' }],
      },
    },
  });
}

const jobs = (e: Exports): Job[] =>
  (JSON.parse(mustKubectl(e, ['get', 'jobs', '-o', 'json'])) as { items: Job[] }).items;
const admitted = (e: Exports): string[] =>
  jobs(e)
    .filter((j) => j.spec.suspend === false)
    .map((j) => j.metadata.name)
    .sort();
const runningPods = (e: Exports): number =>
  mustKubectl(e, [
    'get',
    'pods',
    '-l',
    'batch.kubernetes.io/job-name',
    '--field-selector=status.phase=Running',
    '-o',
    'name',
  ])
    .split('\n')
    .filter(Boolean).length;

describe('Kueue holds GPU quota in DRA devices', () => {
  let e: Exports;
  before(async () => {
    e = await integrationsCluster();
    apply(
      e,
      { apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'ResourceFlavor', metadata: { name: 'h100' } },
      {
        apiVersion: 'kueue.x-k8s.io/v1beta2',
        kind: 'ClusterQueue',
        metadata: { name: CLUSTER_QUEUE },
        spec: {
          namespaceSelector: {},
          resourceGroups: [
            {
              coveredResources: [KUEUE_GPU_RESOURCE],
              flavors: [{ name: 'h100', resources: [{ name: KUEUE_GPU_RESOURCE, nominalQuota: 64 }] }],
            },
          ],
        },
      },
      {
        apiVersion: 'kueue.x-k8s.io/v1beta2',
        kind: 'LocalQueue',
        metadata: { name: QUEUE, namespace: 'default' },
        spec: { clusterQueue: CLUSTER_QUEUE },
      },
      claimTemplate('eight-h100', [deviceRequest('gpu', 'gpu.nvidia.com', 8)]),
    );
  });
  after(() => {
    kubectl(e, ['delete', 'jobs', '--all', '--cascade=foreground', '--wait=true', '--timeout=60s']);
    kubectl(e, ['delete', 'localqueue', QUEUE]);
    kubectl(e, ['delete', 'clusterqueue', CLUSTER_QUEUE, '--wait=true', '--timeout=60s']);
    kubectl(e, ['delete', 'resourceflavor', 'h100']);
    kubectl(e, ['delete', 'resourceclaimtemplate', 'eight-h100']);
  });

  it('admits eight 8-GPU jobs against 64 devices and the ninth when one finishes', async () => {
    apply(e, ...Array.from({ length: JOBS }, (_, i) => job(i)));
    // Kueue's webhook suspends every job of the queue as it is created, so none ran ahead of admission.
    await eventually(
      'eight jobs admitted and their pods Running',
      () => (admitted(e).length === 8 && runningPods(e) === 8 ? true : undefined),
      120_000,
    );
    const held = jobs(e).find((j) => j.spec.suspend !== false);
    assert.ok(held, 'one job held');
    const workloads = (
      JSON.parse(mustKubectl(e, ['get', 'workloads', '-o', 'json'])) as { items: Workload[] }
    ).items;
    const wl = workloads.find((w) => w.metadata.ownerReferences?.some((r) => r.name === held.metadata.name));
    const reserved = wl?.status?.conditions?.find((c) => c.type === 'QuotaReserved');
    assert.equal(reserved?.status, 'False', JSON.stringify(wl?.status));
    assert.match(reserved.message ?? '', new RegExp(KUEUE_GPU_RESOURCE.replace('/', '\\/')));
    const usage = JSON.parse(
      mustKubectl(e, ['get', 'clusterqueue', CLUSTER_QUEUE, '-o', 'jsonpath={.status.flavorsUsage}']),
    ) as { resources: { name: string; total: string }[] }[];
    assert.equal(usage[0]?.resources.find((r) => r.name === KUEUE_GPU_RESOURCE)?.total, '64');

    await eventually(
      `train-0 finished after ${FIRST_RUNS_FOR} and ${held.metadata.name} admitted in its place`,
      () => {
        const js = jobs(e);
        const done = js.find((j) => j.metadata.name === 'train-0')?.status?.succeeded === 1;
        const now = js.find((j) => j.metadata.name === held.metadata.name)?.spec.suspend === false;
        return done && now && runningPods(e) === 8 ? true : undefined;
      },
      180_000,
    );
  });
});
