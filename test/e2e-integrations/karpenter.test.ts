import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { kwokNodePool } from '../../src/local-cluster/karpenter-process.js';
import { KUEUE_GPU_RESOURCE } from '../../src/local-cluster/kueue-process.js';
import { INSTANCE_TYPE_LABEL } from '../../src/model/preset/index.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import { apply, claimTemplate, deviceRequest } from '../support/e2e.js';
import { integrationsCluster, queuedJob } from '../support/integrations.js';
import { karpenterTemplates, templatesOf } from '../../src/tools/karpenter/templates.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import { NIC_CLASS } from '../../src/local-cluster/deviceclasses.js';
import { parseKubernetesVersion } from '../../src/kube/types/version.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';

const sortedByName = (xs: ResourceSlice[]): ResourceSlice[] =>
  [...xs].sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));

/**
 * Karpenter's KWOK provider, built from its module with fakegpu's main, with its DRA allocator on
 * (`cluster up --with karpenter`, GPUs as DRA devices): each instance type carries the slices its nodes
 * will publish, so a pod whose only GPU request is a ResourceClaim gets a node of a type that fits; the
 * fleet publishes that node's slices, the NodeClaim initialises on them, and once the pods are gone
 * Karpenter consolidates the nodes away, their slices with them. The node offers its GPUs once: as DRA
 * devices, never also as `nvidia.com/gpu`.
 */

const POOL = 'gpu';
/** H100 with EFA on each GPU's root, A10G without NICs, and two B200 types of two clouds. */
const TYPES = ['p5.48xlarge', 'g5.48xlarge', 'p6-b200.48xlarge', 'a4-highgpu-8g'];
const B200_TYPES = ['p6-b200.48xlarge', 'a4-highgpu-8g'];

interface Item {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: { phase?: string; nodeName?: string; conditions?: { type: string; status: string }[] };
}

function list(e: Exports, what: string, ...args: string[]): Item[] {
  return (JSON.parse(mustKubectl(e, ['get', what, ...args, '-o', 'json'])) as { items: Item[] }).items;
}

const karpenterNodes = (e: Exports): Item[] => list(e, 'nodes', '-l', `karpenter.sh/nodepool=${POOL}`);

/** The GPU slices' devices on a node, by the fleet. */
function gpusOn(e: Exports, node: string): { name: string; productName?: string }[] {
  return list(
    e,
    'resourceslices',
    '--field-selector',
    `spec.nodeName=${node},spec.driver=${DRIVER_NAME}`,
  ).flatMap((s) =>
    ((s.spec?.['devices'] ?? []) as { name: string; attributes?: Record<string, { string?: string }> }[])
      .filter((d) => d.attributes?.['type']?.string === 'gpu')
      .map((d) => ({ name: d.name, productName: d.attributes?.['productName']?.string })),
  );
}

function gpuPod(name: string, resources: unknown, claims: unknown[] = []): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'karpenter-e2e' } },
    spec: {
      terminationGracePeriodSeconds: 0,
      ...(claims.length > 0 ? { resourceClaims: claims } : {}),
      // KWOK runs the pods of its nodes; the image is never pulled.
      containers: [{ name: 'train', image: 'registry.invalid/train:1', resources }],
    },
  };
}

const claimPod = (name: string, template: string): unknown =>
  gpuPod(name, {}, [{ name: 'gpus', resourceClaimTemplateName: template }]);

function pods(e: Exports): (Item & { spec?: { nodeName?: string } })[] {
  return list(e, 'pods', '-l', 'app=karpenter-e2e');
}

/** The nodes of the case's pods once exactly `count` of them are Running. */
function runningOn(e: Exports, count: number, what: string): Promise<string[]> {
  return eventually(
    what,
    () => {
      const on = pods(e)
        .filter((p) => p.status?.phase === 'Running')
        .map((p) => p.spec?.nodeName ?? '');
      return on.length === count ? on : undefined;
    },
    240_000,
  );
}

/** Karpenter's FailedScheduling message for a pod, once it has one. */
function karpenterVerdict(e: Exports, pod: string): string | undefined {
  const r = kubectl(e, ['get', 'events', '--field-selector', `involvedObject.name=${pod}`, '-o', 'json']);
  const events = (
    JSON.parse(r.out || '{"items":[]}') as { items: { message?: string; source?: { component?: string } }[] }
  ).items;
  return events.find((x) => x.source?.component === 'karpenter' && (x.message ?? '') !== '')?.message;
}

/** A claim template of `count` H100s, by the product name NVIDIA's driver publishes. */
const h100s = (name: string, count: number): unknown =>
  claimTemplate(name, [
    deviceRequest('gpu', DRIVER_NAME, count, [
      `device.attributes["${DRIVER_NAME}"].productName == "NVIDIA H100 80GB HBM3"`,
    ]),
  ]);

/** What an earlier case left (a failed one too) deleted, and Karpenter's nodes consolidated away. */
async function noNodeLeft(e: Exports): Promise<void> {
  kubectl(e, ['delete', 'pods', '-l', 'app=karpenter-e2e', '--wait=true', '--timeout=60s']);
  await eventually(
    'no node of the pool left',
    () => (karpenterNodes(e).length === 0 ? true : undefined),
    180_000,
  );
}

describe("Karpenter's DRA allocator launches GPU nodes from fakegpu's templates", () => {
  let e: Exports;
  before(async () => {
    e = await integrationsCluster();
    apply(
      e,
      kwokNodePool(POOL, TYPES, {
        consolidationPolicy: 'WhenEmptyOrUnderutilized',
        consolidateAfter: '5s',
      }),
    );
  });
  after(() => {
    kubectl(e, ['delete', 'pods', '-l', 'app=karpenter-e2e', '--wait=true', '--timeout=60s']);
    kubectl(e, ['delete', 'resourceclaimtemplates', '--all']);
    kubectl(e, ['delete', 'nodepool', POOL, '--wait=true', '--timeout=120s']);
  });

  it("claim-only pods of 8 H100s get p5.48xlarge nodes, initialised on the fleet's pool, then the nodes go with the pods", async () => {
    await noNodeLeft(e);
    apply(
      e,
      h100s('e2e-eight-h100', 8),
      ...['a', 'b'].map((x) => claimPod(`claim-8-${x}`, 'e2e-eight-h100')),
    );
    const nodes = await runningOn(e, 2, 'two nodes launched and both pods Running');
    assert.notEqual(nodes[0], nodes[1], 'each 8-GPU claim needs a node of its own');
    for (const node of nodes) {
      const n = karpenterNodes(e).find((x) => x.metadata.name === node);
      assert.ok(n, `${node} is a node of NodePool ${POOL}`);
      assert.equal(n.metadata.labels?.[INSTANCE_TYPE_LABEL], 'p5.48xlarge');
      // A pool the fleet rewrote (a new generation) has its old slices deleted just after: 8 once settled.
      const gpus = await eventually(
        `${node}'s 8 GPUs, one pool generation`,
        () => {
          const now = gpusOn(e, node);
          return now.length === 8 ? now : undefined;
        },
        30_000,
      );
      assert.equal(gpus.length, 8);
      assert.equal(
        mustKubectl(e, ['get', 'node', node, '-o', "jsonpath={.status.allocatable['nvidia\\.com/gpu']}"]),
        '',
        `${node} offers its GPUs as DRA devices only`,
      );
    }
    // What the node published is what Karpenter was told it would, device for device, every driver.
    const told = karpenterTemplates({
      // The cluster runs with --dynamic-mig: the templates carry every partition and the counters.
      dynamicMig: true,
      kubernetesVersion: parseKubernetesVersion(
        (JSON.parse(mustKubectl(e, ['version', '-o', 'json'])) as { serverVersion: { gitVersion: string } })
          .serverVersion.gitVersion,
        'the API server',
      ),
      release: DEFAULT_RELEASE,
    }).find((t) => t.instanceType === 'p5.48xlarge');
    assert.ok(told);
    // The pool as Karpenter counts it: each driver's slices of its highest generation, once that
    // generation is complete (resourceSliceCount of them); a pool being rewritten is read when done.
    const published = await eventually(
      `${nodes[0] ?? ''}'s pools complete at their newest generation`,
      () => {
        const all = list(
          e,
          'resourceslices',
          '--field-selector',
          `spec.nodeName=${nodes[0] ?? ''}`,
        ) as unknown as ResourceSlice[];
        const newest = new Map<string, number>();
        for (const x of all)
          newest.set(x.spec.driver, Math.max(newest.get(x.spec.driver) ?? 0, x.spec.pool.generation));
        const pool = all.filter((x) => x.spec.pool.generation === newest.get(x.spec.driver));
        const complete = [...newest.keys()].every((d) => {
          const mine = pool.filter((x) => x.spec.driver === d);
          return mine.length === mine[0]?.spec.pool.resourceSliceCount;
        });
        return complete ? pool : undefined;
      },
      60_000,
    );
    const byDriver = (xs: { driver: string }[], d: string): unknown[] => xs.filter((x) => x.driver === d);
    for (const driver of [DRIVER_NAME, DRANET])
      assert.deepEqual(
        byDriver(
          templatesOf(sortedByName(published), new Set(told.perNodeAttributes), 'p5.48xlarge'),
          driver,
        ),
        byDriver(told.resourceSliceTemplates, driver),
        driver,
      );
    // Karpenter asked for the driver's pool and waited for it: the NodeClaims say so and are initialised.
    const claims = list(e, 'nodeclaims').filter((c) => nodes.includes(c.status?.nodeName ?? ''));
    assert.equal(claims.length, 2, JSON.stringify(claims.map((c) => c.metadata.name)));
    for (const c of claims) {
      assert.equal(c.metadata.annotations?.['karpenter.sh/requested-dra-drivers'], DRIVER_NAME);
      assert.equal(
        c.status?.conditions?.find((x) => x.type === 'Initialized')?.status,
        'True',
        c.metadata.name,
      );
    }

    mustKubectl(e, ['delete', 'pods', '-l', 'app=karpenter-e2e', '--wait=true', '--timeout=60s']);
    await eventually(
      'the empty nodes consolidated away with their slices',
      () =>
        karpenterNodes(e).length === 0 && nodes.every((n) => gpusOn(e, n).length === 0) ? true : undefined,
      180_000,
    );
  });

  it("offers a node's GPUs once: nvidia.com/gpu pods and claim pods on it never hold more than its GPUs", async () => {
    await noNodeLeft(e);
    apply(e, h100s('e2e-four-h100', 4), claimPod('claim-4', 'e2e-four-h100'));
    const node = await eventually(
      'a node for the 4-GPU claim',
      () => pods(e).find((p) => p.status?.phase === 'Running')?.spec?.nodeName,
      240_000,
    );
    // Pinned to that node: 4 GPUs as a claim, then 4 + 4 as nvidia.com/gpu through the DeviceClass's
    // extended resource. Only one of the two extended-resource pods can run.
    const pinned = (name: string, resources: unknown, claims: unknown[] = []): unknown => {
      const p = gpuPod(name, resources, claims) as { spec: Record<string, unknown> };
      // By the node's name, as DaemonSets pin their pods: a KWOK node's hostname label is not its name.
      p.spec['affinity'] = {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }],
          },
        },
      };
      p.spec['tolerations'] = [{ operator: 'Exists' }];
      return p;
    };
    apply(
      e,
      pinned('ext-4-a', { limits: { 'nvidia.com/gpu': '4' } }),
      pinned('ext-4-b', { limits: { 'nvidia.com/gpu': '4' } }),
    );
    const running = await eventually(
      'one extended-resource pod Running beside the claim pod',
      () => {
        const ext = pods(e).filter((p) => p.metadata.name.startsWith('ext-4-'));
        return ext.filter((p) => p.status?.phase === 'Running').length === 1 ? ext : undefined;
      },
      120_000,
    );
    await sleep(10_000);
    const after = pods(e).filter((p) => p.metadata.name.startsWith('ext-4-'));
    assert.deepEqual(
      after.map((p) => p.status?.phase).sort(),
      ['Pending', 'Running'],
      `8 GPUs on ${node}: a claim of 4 and one pod of 4, the other waits (${JSON.stringify(running.map((p) => p.metadata.name))})`,
    );
    const ran = after.find((p) => p.status?.phase === 'Running')?.metadata.name ?? '';
    assert.notEqual(
      mustKubectl(e, [
        'get',
        'pod',
        ran,
        '-o',
        'jsonpath={.status.extendedResourceClaimStatus.resourceClaimName}',
      ]),
      '',
      `${ran} got its GPUs as a DRA claim on the node's slices`,
    );
    mustKubectl(e, ['delete', 'pods', '-l', 'app=karpenter-e2e', '--wait=true', '--timeout=60s']);
  });

  /** The node the one pod of this case runs on, once it runs, and that node's instance type. */
  async function placed(e: Exports, what: string): Promise<{ node: string; type: string }> {
    const [node = ''] = await runningOn(e, 1, what);
    const n = karpenterNodes(e).find((x) => x.metadata.name === node);
    assert.ok(n, `${node} is a node of NodePool ${POOL}`);
    return { node, type: n.metadata.labels?.[INSTANCE_TYPE_LABEL] ?? '' };
  }

  /** The devices a pod's claim was allocated: the slices' attributes of each, by driver. */
  function allocated(e: Exports, pod: string): { driver: string; attributes: Record<string, unknown> }[] {
    const claim = mustKubectl(e, [
      'get',
      'pod',
      pod,
      '-o',
      'jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}',
    ]);
    const results =
      (
        JSON.parse(mustKubectl(e, ['get', 'resourceclaim', claim, '-o', 'json'])) as {
          status?: {
            allocation?: { devices?: { results?: { driver: string; pool: string; device: string }[] } };
          };
        }
      ).status?.allocation?.devices?.results ?? [];
    const slices = list(e, 'resourceslices') as unknown as ResourceSlice[];
    return results.map((r) => {
      const d = slices
        .filter((x) => x.spec.driver === r.driver && x.spec.pool.name === r.pool)
        .flatMap((x) => x.spec.devices ?? [])
        .find((x) => x.name === r.device);
      assert.ok(d, `${r.driver}/${r.pool}/${r.device} is published`);
      return { driver: r.driver, attributes: d.attributes ?? {} };
    });
  }

  it('a claim for a B200 by CEL gets a node of a B200 type', async () => {
    await noNodeLeft(e);
    apply(
      e,
      claimTemplate('e2e-one-b200', [
        deviceRequest('gpu', DRIVER_NAME, 1, [
          `device.attributes["${DRIVER_NAME}"].productName == "NVIDIA B200"`,
        ]),
      ]),
      claimPod('claim-b200', 'e2e-one-b200'),
    );
    const { node, type } = await placed(e, 'a node for the B200 claim');
    assert.ok(B200_TYPES.includes(type), `${node} is a ${type}, not one of ${B200_TYPES.join(', ')}`);
    assert.deepEqual(
      [...new Set(gpusOn(e, node).map((g) => g.productName))],
      ['NVIDIA B200'],
      `${node}'s GPUs`,
    );
    await noNodeLeft(e);
  });

  it('a claim for two 1g MIG partitions gets an H100 type whose templates carry the MIG counters', async () => {
    await noNodeLeft(e);
    apply(
      e,
      claimTemplate('e2e-two-1g', [
        deviceRequest('mig', 'mig.nvidia.com', 2, [
          `device.attributes["${DRIVER_NAME}"].profile == "1g.10gb"`,
        ]),
      ]),
      claimPod('claim-mig', 'e2e-two-1g'),
    );
    const { node, type } = await placed(e, 'a node for the MIG claim');
    assert.equal(type, 'p5.48xlarge', `${node}: the one type in the pool with 1g.10gb partitions`);
    const devices = allocated(e, 'claim-mig');
    assert.equal(devices.length, 2);
    for (const d of devices) assert.deepEqual(d.attributes['profile'], { string: '1g.10gb' });
    const counters = (
      list(e, 'resourceslices', '--field-selector', `spec.nodeName=${node}`) as unknown as ResourceSlice[]
    ).flatMap((x) => x.spec.sharedCounters ?? []);
    assert.ok(counters.length >= 8, `${node} publishes a counter set per GPU (${counters.length})`);
    await noNodeLeft(e);
  });

  it("a GPU and a NIC on one PCIe root get a type whose NICs share the GPUs' roots", async () => {
    await noNodeLeft(e);
    apply(
      e,
      claimTemplate(
        'e2e-gpu-nic',
        [
          deviceRequest('gpu', DRIVER_NAME, 1, [
            `device.attributes["${DRIVER_NAME}"].productName == "NVIDIA H100 80GB HBM3"`,
          ]),
          deviceRequest('nic', NIC_CLASS, 1, ['device.attributes["dra.net"].rdma == true']),
        ],
        'resource.kubernetes.io/pcieRoot',
      ),
      claimPod('claim-gpu-nic', 'e2e-gpu-nic'),
    );
    const { node, type } = await placed(e, 'a node for the GPU+NIC claim');
    assert.equal(type, 'p5.48xlarge', `${node}: the H100 type in the pool with RDMA NICs`);
    const roots = allocated(e, 'claim-gpu-nic').map((d) =>
      JSON.stringify(d.attributes['resource.kubernetes.io/pcieRoot']),
    );
    assert.equal(roots.length, 2);
    assert.equal(roots[0], roots[1], 'the GPU and the NIC share their root');
    assert.notEqual(roots[0], undefined);
    await noNodeLeft(e);
  });

  it("Kueue admits claim-template jobs against 16 GPUs of quota on Karpenter's nodes, and holds the third", async () => {
    await noNodeLeft(e);
    const queue = 'karpenter-gpus';
    apply(
      e,
      // The flavor's label puts admitted pods on the NodePool's nodes: Karpenter launches them.
      {
        apiVersion: 'kueue.x-k8s.io/v1beta2',
        kind: 'ResourceFlavor',
        metadata: { name: 'karpenter-gpus' },
        spec: { nodeLabels: { 'karpenter.sh/nodepool': POOL } },
      },
      {
        apiVersion: 'kueue.x-k8s.io/v1beta2',
        kind: 'ClusterQueue',
        metadata: { name: queue },
        spec: {
          namespaceSelector: {},
          resourceGroups: [
            {
              coveredResources: [KUEUE_GPU_RESOURCE],
              flavors: [
                { name: 'karpenter-gpus', resources: [{ name: KUEUE_GPU_RESOURCE, nominalQuota: 16 }] },
              ],
            },
          ],
        },
      },
      {
        apiVersion: 'kueue.x-k8s.io/v1beta2',
        kind: 'LocalQueue',
        metadata: { name: queue, namespace: 'default' },
        spec: { clusterQueue: queue },
      },
      // Kueue 0.17 counts a template only when its requests are a class and a count: no selector.
      claimTemplate('e2e-queued-gpus', [deviceRequest('gpu', DRIVER_NAME, 8)]),
      // KWOK completes a Job's pod at once unless told to wait: these run on until deleted.
      ...[0, 1, 2].map((i) =>
        queuedJob({
          name: `queued-${i}`,
          queue,
          template: 'e2e-queued-gpus',
          runFor: '24h',
          pod: { labels: { app: 'karpenter-e2e' }, spec: { terminationGracePeriodSeconds: 0 } },
        }),
      ),
    );
    try {
      const nodes = await runningOn(
        e,
        2,
        'two jobs admitted, their pods Running on two nodes Karpenter launched',
      );
      assert.notEqual(nodes[0], nodes[1]);
      for (const node of nodes)
        assert.equal(
          karpenterNodes(e).find((x) => x.metadata.name === node)?.metadata.labels?.[INSTANCE_TYPE_LABEL],
          'g5.48xlarge',
          `${node}: the cheapest type of the pool with 8 GPUs`,
        );
      const suspended = (
        JSON.parse(
          mustKubectl(e, ['get', 'jobs', '-l', `kueue.x-k8s.io/queue-name=${queue}`, '-o', 'json']),
        ) as {
          items: { metadata: { name: string }; spec: { suspend?: boolean } }[];
        }
      ).items
        .filter((j) => j.spec.suspend !== false)
        .map((j) => j.metadata.name);
      assert.equal(suspended.length, 1, `one job held by the quota: ${JSON.stringify(suspended)}`);
      assert.equal(list(e, 'nodeclaims').length, 2, 'no node for the held job');
    } finally {
      kubectl(e, [
        'delete',
        'jobs',
        '-l',
        `kueue.x-k8s.io/queue-name=${queue}`,
        '--cascade=foreground',
        '--wait=true',
        '--timeout=60s',
      ]);
      kubectl(e, ['delete', 'localqueue', queue]);
      kubectl(e, ['delete', 'clusterqueue', queue, '--wait=true', '--timeout=60s']);
      kubectl(e, ['delete', 'resourceflavor', 'karpenter-gpus']);
    }
    await noNodeLeft(e);
  });

  it("a claim no instance type can satisfy gets Karpenter's verdict and no node", async () => {
    await noNodeLeft(e);
    apply(
      e,
      claimTemplate('e2e-sixteen-gpus', [deviceRequest('gpu', DRIVER_NAME, 16)]),
      claimPod('claim-16', 'e2e-sixteen-gpus'),
    );
    const verdict = await eventually(
      "Karpenter's verdict on the pod",
      () => karpenterVerdict(e, 'claim-16'),
      120_000,
    );
    assert.match(verdict, /no instance type can satisfy/i);
    await sleep(15_000);
    assert.equal(list(e, 'nodeclaims').length, 0, 'no NodeClaim for a claim no type can hold');
    assert.equal(mustKubectl(e, ['get', 'pod', 'claim-16', '-o', 'jsonpath={.status.phase}']), 'Pending');
    mustKubectl(e, ['delete', 'pod', 'claim-16', '--wait=true', '--timeout=60s']);
  });
});
