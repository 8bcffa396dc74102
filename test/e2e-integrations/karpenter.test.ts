import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { kwokNodePool } from '../../src/local-cluster/karpenter-process.js';
import { INSTANCE_TYPE_LABEL } from '../../src/model/preset/index.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import { apply, claimTemplate, deviceRequest } from '../support/e2e.js';
import { integrationsCluster } from '../support/integrations.js';
import { karpenterTemplates, templatesOf } from '../../src/tools/karpenter/templates.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { DRANET } from '../../src/model/nic/attributes.js';
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
const TYPES = ['p5.48xlarge', 'g5.48xlarge'];

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
    const nodes = await eventually(
      'two nodes launched and both pods Running',
      () => {
        const on = pods(e)
          .filter((p) => p.status?.phase === 'Running')
          .map((p) => p.spec?.nodeName ?? '');
        return on.length === 2 ? on : undefined;
      },
      240_000,
    );
    assert.notEqual(nodes[0], nodes[1], 'each 8-GPU claim needs a node of its own');
    for (const node of nodes) {
      const n = karpenterNodes(e).find((x) => x.metadata.name === node);
      assert.ok(n, `${node} is a node of NodePool ${POOL}`);
      assert.equal(n.metadata.labels?.[INSTANCE_TYPE_LABEL], 'p5.48xlarge');
      const gpus = gpusOn(e, node);
      assert.equal(gpus.length, 8, `${node}: ${JSON.stringify(gpus)}`);
      assert.equal(
        mustKubectl(e, ['get', 'node', node, '-o', "jsonpath={.status.allocatable['nvidia\\.com/gpu']}"]),
        '',
        `${node} offers its GPUs as DRA devices only`,
      );
    }
    // What the node published is what Karpenter was told it would, device for device, every driver.
    const told = karpenterTemplates({
      dynamicMig: false,
      kubernetesVersion: parseKubernetesVersion(
        (JSON.parse(mustKubectl(e, ['version', '-o', 'json'])) as { serverVersion: { gitVersion: string } })
          .serverVersion.gitVersion,
        'the API server',
      ),
      release: DEFAULT_RELEASE,
    }).find((t) => t.instanceType === 'p5.48xlarge');
    assert.ok(told);
    const published = list(
      e,
      'resourceslices',
      '--field-selector',
      `spec.nodeName=${nodes[0] ?? ''}`,
    ) as unknown as ResourceSlice[];
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
