import assert from 'node:assert/strict';
import { afterEach, before, describe, it } from 'node:test';
import { clusterRestart, type Exports } from '../../src/local-cluster/cluster.js';
import {
  CLIQUE_LABEL,
  DEFAULT_DRIVER_NAMESPACE,
  DOMAIN_LABEL,
  GPU_CLIQUE_LABEL,
  type ComputeDomain,
  type ComputeDomainClique,
} from '../../src/model/compute-domain/resource.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import { apply, CD_CLUSTER_DIR, CD_NODE, computeDomainsCluster, running } from '../support/e2e.js';

/**
 * NVIDIA's ComputeDomains end to end: the real API server, scheduler, kubelet and DaemonSet controller
 * with fakegpu's emulated controller, compute-domain kubelet plugin and IMEX daemon stand-in, on a local
 * GB200 tray; and the same across two KWOK NVL72 racks served by the fleet.
 */

const NS = DEFAULT_DRIVER_NAMESPACE;

function domain(name: string, numNodes: number, allocationMode?: 'All'): object {
  return {
    apiVersion: 'resource.nvidia.com/v1beta1',
    kind: 'ComputeDomain',
    metadata: { name, namespace: 'default' },
    spec: {
      numNodes,
      channel: {
        resourceClaimTemplate: { name: `${name}-channel` },
        ...(allocationMode ? { allocationMode } : {}),
      },
    },
  };
}

/** A pod of the domain's workload: one channel claim from its template, on the nodes `selector` picks. */
function worker(
  e: Exports,
  name: string,
  cd: string,
  selector: Record<string, string>,
  command?: string,
): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { domain: cd } },
    spec: {
      terminationGracePeriodSeconds: 1,
      nodeSelector: selector,
      tolerations: [{ operator: 'Exists' }],
      resourceClaims: [{ name: 'channel', resourceClaimTemplateName: `${cd}-channel` }],
      containers: [
        {
          name: 'c',
          image: e.FAKEGPU_TEST_IMAGE,
          imagePullPolicy: 'Never',
          command: ['sh', '-c', command ?? 'sleep 3600'],
          resources: { claims: [{ name: 'channel' }] },
        },
      ],
    },
  };
}

const LIST_CHANNELS =
  'ls /dev/nvidia-caps-imex-channels | wc -l; ls /dev/nvidia-caps-imex-channels | head -1; sleep 3600';

function getDomain(e: Exports, name: string): ComputeDomain | undefined {
  const r = kubectl(e, ['get', 'computedomain', name, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.out) as ComputeDomain) : undefined;
}

async function ready(e: Exports, name: string, nodes: number, timeoutMs = 120_000): Promise<ComputeDomain> {
  return eventually(
    `ComputeDomain ${name} Ready with ${nodes} node(s)`,
    () => {
      const cd = getDomain(e, name);
      return cd?.status?.status === 'Ready' && cd.status.nodes?.length === nodes ? cd : undefined;
    },
    timeoutMs,
  );
}

function nodeLabels(e: Exports, node: string): Record<string, string> {
  return (
    JSON.parse(mustKubectl(e, ['get', 'node', node, '-o', 'json'])) as {
      metadata: { labels: Record<string, string> };
    }
  ).metadata.labels;
}

function names(e: Exports, args: string[]): string[] {
  return mustKubectl(e, ['get', ...args, '-o', 'name'])
    .split('\n')
    .filter(Boolean);
}

/** The KWOK nodes by their clique label. */
function racks(e: Exports): Map<string, string[]> {
  const list = JSON.parse(mustKubectl(e, ['get', 'nodes', '-l', 'type=kwok', '-o', 'json'])) as {
    items: { metadata: { name: string; labels: Record<string, string> } }[];
  };
  const out = new Map<string, string[]>();
  for (const n of list.items) {
    const c = n.metadata.labels[GPU_CLIQUE_LABEL];
    if (c === undefined) continue;
    out.set(c, [...(out.get(c) ?? []), n.metadata.name].sort());
  }
  return out;
}

async function cleanDomains(e: Exports): Promise<void> {
  kubectl(e, ['delete', 'pods', '--all', '--wait=true', '--timeout=120s']);
  kubectl(e, ['delete', 'computedomains', '--all', '--wait=true', '--timeout=120s']);
  await eventually(
    'every ComputeDomain object gone',
    () =>
      names(e, ['resourceclaimtemplates,daemonsets,computedomaincliques', '-A', '-l', DOMAIN_LABEL])
        .length === 0 &&
      names(e, ['nodes', '-l', DOMAIN_LABEL]).length === 0 &&
      names(e, ['pods', '-n', NS]).length === 0
        ? true
        : undefined,
    120_000,
  );
}

describe('ComputeDomains on a GB200 tray and two KWOK NVL72 racks', () => {
  let e: Exports;
  before(async () => {
    e = await computeDomainsCluster();
  });
  afterEach(async () => {
    await cleanDomains(e);
  });

  it("runs a one-node domain's pod with channel 0, reports the node Ready in its clique, and cleans up on deletion", async () => {
    apply(
      e,
      domain('local', 1),
      worker(e, 'local-0', 'local', { 'kubernetes.io/hostname': CD_NODE }, LIST_CHANNELS),
    );
    await running(e, 'local-0', 120_000);
    const out = await eventually('the channels the pod sees', () => {
      const r = kubectl(e, ['logs', 'local-0']);
      return r.code === 0 && r.out.includes('channel') ? r.out : undefined;
    });
    assert.deepEqual(out.trim().split('\n'), ['1', 'channel0']);
    const cd = await ready(e, 'local', 1);
    const clique = nodeLabels(e, CD_NODE)[GPU_CLIQUE_LABEL];
    assert.match(
      clique ?? '',
      /^[0-9a-f-]{36}\.\d+$/,
      'the node carries its clique, as GPU Feature Discovery sets it',
    );
    assert.deepEqual(
      cd.status?.nodes?.map((n) => ({ ...n, ipAddress: n.ipAddress !== '' })),
      [{ name: CD_NODE, ipAddress: true, cliqueID: clique, index: 0, status: 'Ready' }],
    );
    const uid = cd.metadata.uid;
    assert.equal(nodeLabels(e, CD_NODE)[DOMAIN_LABEL], uid, 'labelled at channel prepare');
    const daemons = JSON.parse(
      mustKubectl(e, ['get', 'pods', '-n', NS, '-l', `${DOMAIN_LABEL}=${uid}`, '-o', 'json']),
    ) as {
      items: {
        metadata: { labels: Record<string, string> };
        spec: { nodeName: string };
        status: { phase: string };
      }[];
    };
    assert.deepEqual(
      daemons.items.map((p) => [p.spec.nodeName, p.status.phase, p.metadata.labels[CLIQUE_LABEL]]),
      [[CD_NODE, 'Running', clique]],
    );
    const cl = JSON.parse(
      mustKubectl(e, ['get', 'computedomainclique', '-n', NS, `${uid}.${clique ?? ''}`, '-o', 'json']),
    ) as ComputeDomainClique;
    assert.deepEqual(
      cl.daemons?.map((d) => [d.nodeName, d.index, d.status]),
      [[CD_NODE, 0, 'Ready']],
    );

    mustKubectl(e, ['delete', 'pod', 'local-0', '--wait=true', '--timeout=60s']);
    mustKubectl(e, ['delete', 'computedomain', 'local', '--wait=true', '--timeout=60s']);
    await eventually('everything of the domain gone', () =>
      names(e, [
        'resourceclaimtemplates,daemonsets,computedomaincliques',
        '-A',
        '-l',
        `${DOMAIN_LABEL}=${uid}`,
      ]).length === 0 &&
      nodeLabels(e, CD_NODE)[DOMAIN_LABEL] === undefined &&
      names(e, ['pods', '-n', NS]).length === 0
        ? true
        : undefined,
    );
  });

  it('keeps a running domain through restarts of the plugin and the controller, and still cleans up', async () => {
    apply(e, domain('steady', 1), worker(e, 'steady-0', 'steady', { 'kubernetes.io/hostname': CD_NODE }));
    await running(e, 'steady-0', 120_000);
    const before = await ready(e, 'steady', 1);
    const sees = () =>
      mustKubectl(e, ['exec', 'steady-0', '--', 'ls', '/dev/nvidia-caps-imex-channels']).trim();
    assert.equal(sees(), 'channel0');
    for (const component of ['fakegpu-plugin', 'fakegpu-compute-domain-controller'] as const)
      await clusterRestart(CD_CLUSTER_DIR, component, (l) => {
        process.stderr.write(`fakegpu: ${l}\n`);
      });
    assert.equal(mustKubectl(e, ['get', 'pod', 'steady-0', '-o', 'jsonpath={.status.phase}']), 'Running');
    assert.equal(sees(), 'channel0');
    const after = await ready(e, 'steady', 1);
    assert.deepEqual(after.status?.nodes, before.status?.nodes, 'the same node, clique and index');
    assert.equal(nodeLabels(e, CD_NODE)[DOMAIN_LABEL], before.metadata.uid);
  });

  it('gives every one of the 2048 channels with allocationMode All', async () => {
    apply(
      e,
      domain('all', 1, 'All'),
      worker(e, 'all-0', 'all', { 'kubernetes.io/hostname': CD_NODE }, LIST_CHANNELS),
    );
    await running(e, 'all-0', 120_000);
    const out = await eventually('the channels the pod sees', () => {
      const r = kubectl(e, ['logs', 'all-0']);
      return r.code === 0 && r.out.includes('channel') ? r.out : undefined;
    });
    assert.deepEqual(out.trim().split('\n'), ['2048', 'channel0']);
  });

  it("keeps a pod waiting in ContainerCreating with NVIDIA's message while its node is labelled for another domain", async () => {
    apply(e, domain('first', 1), domain('second', 1));
    const first = await eventually('the first domain', () => getDomain(e, 'first'));
    mustKubectl(e, ['label', 'node', CD_NODE, `${DOMAIN_LABEL}=${first.metadata.uid}`, '--overwrite']);
    apply(e, worker(e, 'second-0', 'second', { 'kubernetes.io/hostname': CD_NODE }));
    const uid = await eventually('the pod', () => {
      const r = kubectl(e, ['get', 'pod', 'second-0', '-o', 'jsonpath={.metadata.uid}']);
      return r.code === 0 && r.out !== '' ? r.out : undefined;
    });
    // This pod's events only: a cluster directory keeps its etcd, and events of an earlier run, across down and up.
    const message = await eventually(
      'the prepare failure in the pod events',
      () => {
        const ev = mustKubectl(e, [
          'get',
          'events',
          '--field-selector',
          `involvedObject.uid=${uid},reason=FailedPrepareDynamicResources`,
          '-o',
          'jsonpath={.items[*].message}',
        ]);
        return ev.includes('label already exists') ? ev : undefined;
      },
      120_000,
    );
    assert.match(
      message,
      /error preparing devices for claim 'default\/second-0-channel-[a-z0-9]+:[0-9a-f-]+': prepare devices failed: label already exists for a different ComputeDomain/,
    );
    assert.equal(mustKubectl(e, ['get', 'pod', 'second-0', '-o', 'jsonpath={.status.phase}']), 'Pending');
    await eventually('the pod waiting in ContainerCreating', () =>
      mustKubectl(e, [
        'get',
        'pod',
        'second-0',
        '-o',
        'jsonpath={.status.containerStatuses[0].state.waiting.reason}',
      ]) === 'ContainerCreating'
        ? true
        : undefined,
    );
    // The other domain lets go of the node: the waiting pod goes on.
    mustKubectl(e, ['label', 'node', CD_NODE, `${DOMAIN_LABEL}-`]);
    await running(e, 'second-0', 180_000);
    await ready(e, 'second', 1);
  });

  it('places an 18-pod job in one rack with its domain Ready on 18 nodes, and a second job in the other rack', async () => {
    const byClique = racks(e);
    assert.deepEqual(
      [...byClique.values()].map((n) => n.length),
      [18, 18],
      'two racks of 18 trays',
    );
    const [[cliqueA, nodesA], [cliqueB, nodesB]] = [...byClique.entries()] as [
      [string, string[]],
      [string, string[]],
    ];
    for (const [job, clique] of [
      ['job-a', cliqueA],
      ['job-b', cliqueB],
    ] as const)
      apply(
        e,
        domain(job, 18),
        ...Array.from({ length: 18 }, (_, i) =>
          worker(e, `${job}-${i}`, job, { [GPU_CLIQUE_LABEL]: clique }),
        ),
      );
    for (const [job, clique, nodes] of [
      ['job-a', cliqueA, nodesA],
      ['job-b', cliqueB, nodesB],
    ] as const) {
      const cd = await ready(e, job, 18, 180_000);
      assert.deepEqual(cd.status?.nodes?.map((n) => n.name).sort(), nodes);
      assert.ok(cd.status.nodes.every((n) => n.cliqueID === clique && n.status === 'Ready'));
      assert.deepEqual(
        cd.status.nodes.map((n) => n.index).sort((a, b) => a - b),
        Array.from({ length: 18 }, (_, i) => i),
      );
      const pods = JSON.parse(mustKubectl(e, ['get', 'pods', '-l', `domain=${job}`, '-o', 'json'])) as {
        items: { spec: { nodeName: string }; status: { phase: string } }[];
      };
      assert.deepEqual(pods.items.map((p) => p.spec.nodeName).sort(), nodes, 'one pod per tray of the rack');
      assert.ok(pods.items.every((p) => p.status.phase === 'Running'));
    }
  });

  it('shows a domain whose pods span both racks in two cliques', async () => {
    const [a, b] = [...racks(e).values()].map((n) => n[0] ?? '');
    apply(
      e,
      domain('spread', 2),
      worker(e, 'spread-0', 'spread', { 'kubernetes.io/hostname': a ?? '' }),
      worker(e, 'spread-1', 'spread', { 'kubernetes.io/hostname': b ?? '' }),
    );
    const cd = await ready(e, 'spread', 2);
    assert.equal(new Set(cd.status?.nodes?.map((n) => n.cliqueID)).size, 2);
    assert.deepEqual(
      cd.status?.nodes?.map((n) => n.index),
      [0, 0],
      'each first in its own clique',
    );
    assert.equal(
      names(e, ['computedomaincliques', '-n', NS, '-l', `${DOMAIN_LABEL}=${cd.metadata.uid}`]).length,
      2,
    );
  });
});
