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

/**
 * Karpenter's KWOK provider, built from its module, buys GPU nodes for pending pods: it launches KWOK
 * nodes of a GPU instance type, the fleet publishes their slices from the instance type alone, the pods
 * run on them, and once they are gone Karpenter consolidates the nodes away, their slices with them.
 */

const POOL = 'gpu';
const TYPE = 'p5.48xlarge';

interface Item {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
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

describe('Karpenter launches GPU nodes the fleet fills in', () => {
  let e: Exports;
  before(async () => {
    e = await integrationsCluster();
    apply(
      e,
      kwokNodePool(POOL, [TYPE], 64, {
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

  it('pods asking nvidia.com/gpu: 8 get p5.48xlarge nodes with 8 H100s each, then the nodes go with the pods', async () => {
    apply(e, ...['a', 'b'].map((x) => gpuPod(`gpu-8-${x}`, { limits: { 'nvidia.com/gpu': '8' } })));
    const nodes = await eventually(
      'two nodes launched and both pods Running',
      () => {
        const pods = list(e, 'pods', '-l', 'app=karpenter-e2e') as (Item & {
          status?: { phase?: string };
          spec?: { nodeName?: string };
        })[];
        const onNodes = pods.filter((p) => p.status?.phase === 'Running').map((p) => p.spec?.nodeName ?? '');
        return onNodes.length === 2 ? onNodes : undefined;
      },
      180_000,
    );
    assert.notEqual(nodes[0], nodes[1], 'each 8-GPU pod needs a node of its own');
    for (const node of nodes) {
      const n = karpenterNodes(e).find((x) => x.metadata.name === node);
      assert.ok(n, `${node} is a node of NodePool ${POOL}`);
      assert.equal(n.metadata.labels?.[INSTANCE_TYPE_LABEL], TYPE);
      const gpus = gpusOn(e, node);
      assert.equal(gpus.length, 8, `${node}: ${JSON.stringify(gpus)}`);
      assert.ok(
        gpus.every((g) => g.productName === 'NVIDIA H100 80GB HBM3'),
        JSON.stringify(gpus),
      );
    }
    // Karpenter's KWOK provider gives its nodes the instance type's nvidia.com/gpu as allocatable, as a
    // device plugin would, and its initialization waits for it (RequestedResourcesRegistered). The
    // scheduler takes a node's allocatable before DRA (extendeddynamicresources.go: DRA only where it is
    // 0), so these pods are counted against it and get no claim: the fleet's devices stay free for claims.
    for (const pod of ['gpu-8-a', 'gpu-8-b']) {
      const node = mustKubectl(e, ['get', 'pod', pod, '-o', 'jsonpath={.spec.nodeName}']);
      assert.equal(
        mustKubectl(e, ['get', 'node', node, '-o', "jsonpath={.status.allocatable['nvidia\\.com/gpu']}"]),
        '8',
      );
      assert.equal(
        mustKubectl(e, ['get', 'pod', pod, '-o', 'jsonpath={.status.extendedResourceClaimStatus}']),
        '',
        `${pod} was counted against the node's allocatable, not given a DRA claim`,
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

  it('a pod with only a ResourceClaim gets no node: Karpenter leaves DRA pods alone by default', async () => {
    // On a node of the first case the claim would simply fit: none may be left.
    await eventually(
      'no node of the pool left',
      () => (karpenterNodes(e).length === 0 ? true : undefined),
      180_000,
    );
    apply(
      e,
      claimTemplate('eight-gpus', [deviceRequest('gpu', 'gpu.nvidia.com', 8)]),
      gpuPod('claim-only', {}, [{ name: 'gpus', resourceClaimTemplateName: 'eight-gpus' }]),
    );
    // Karpenter's verdict on the pod, as it logs it (IGNORE_DRA_REQUESTS, default true since v1.13).
    const log = await eventually(
      "Karpenter's verdict on the DRA pod",
      () => {
        const r = kubectl(e, [
          'get',
          'events',
          '--field-selector',
          'involvedObject.name=claim-only',
          '-o',
          'json',
        ]);
        const events = (JSON.parse(r.out || '{"items":[]}') as { items: { message?: string }[] }).items;
        return events.map((x) => x.message ?? '').find((m) => m.includes('Dynamic Resource Allocation'));
      },
      60_000,
    );
    assert.match(log, /not yet supported by Karpenter/);
    await sleep(15_000);
    assert.equal(list(e, 'nodeclaims').length, 0, 'no NodeClaim for a claim-only pod');
    assert.equal(mustKubectl(e, ['get', 'pod', 'claim-only', '-o', 'jsonpath={.status.phase}']), 'Pending');
  });
});
