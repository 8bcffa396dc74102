import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { layout } from '../../src/local-cluster/config.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { FAKEGPU_IMAGE } from '../../src/local-cluster/fakegpu-image.js';
import {
  helm,
  HELM_NAMESPACE,
  HELM_RELEASE,
  helmValuesFile,
  CHART_DIR,
  chartPodQuery,
  pluginPodQuery,
} from '../../src/local-cluster/helm-chart.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { readState } from '../../src/local-cluster/state.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import {
  allocatedUuids,
  E2E_NODE as HELM_NODE,
  apply,
  claimTemplate,
  deviceRequest,
  HELM_CLUSTER_DIR,
  HELM_KWOK_NODES,
  helmCluster,
  podClaim,
  podManifest,
  running,
  seen,
  seesNow,
} from '../support/e2e.js';

/**
 * fakegpu as users install it: `cluster up --helm` builds its image, imports it into the node's
 * containerd and installs deploy/helm/fakegpu. The plugin is the DaemonSet's pod, registered with the
 * real kubelet through the chart's host paths; the fleet is the Deployment's pod, publishing KWOK nodes'
 * slices under the chart's RBAC. Then `helm upgrade` to other machines, `helm uninstall` (refused while a
 * pod holds a GPU) and `helm install` again, which leaves the chart installed as it was for test/e2e's
 * checks, which node's runner takes after this file (it sorts them).
 */

interface Slice {
  spec: {
    driver: string;
    nodeName?: string;
    devices?: { name: string; attributes?: Record<string, { string?: string }> }[];
    sharedCounters?: unknown[];
  };
}

const l = layout(HELM_CLUSTER_DIR);

function slicesOf(e: Exports, node: string, driver = 'gpu.nvidia.com'): Slice[] {
  const out = mustKubectl(e, [
    'get',
    'resourceslices',
    `--field-selector=spec.nodeName=${node}`,
    '-o',
    'json',
  ]);
  return (JSON.parse(out) as { items: Slice[] }).items.filter((s) => s.spec.driver === driver);
}

const devicesOf = (slices: Slice[]): string[] =>
  slices.flatMap((s) => (s.spec.devices ?? []).map((d) => d.name));

function pluginPod(e: Exports): string {
  const name = mustKubectl(e, pluginPodQuery(HELM_NODE, '{.items[*].metadata.name}')).trim();
  assert.match(name, /^fakegpu-plugin-\w+$/, `one plugin pod on ${HELM_NODE}, got ${JSON.stringify(name)}`);
  return name;
}

function helmOf(args: string[]): string {
  const s = readState(l);
  assert.ok(s, `a cluster in ${HELM_CLUSTER_DIR}`);
  const r = helm(l, { bin: s.bin, cniBin: s.cniBin }, args);
  assert.equal(r.code, 0, `helm ${args.join(' ')}: ${r.err}`);
  return r.out;
}

/** `helm install` or `upgrade` of the chart with the values `cluster up --helm` wrote, and `extra`. */
const chartWith = (verb: 'install' | 'upgrade', extra: string[] = []): string[] => [
  verb,
  HELM_RELEASE,
  join(REPO_ROOT, CHART_DIR),
  '-n',
  HELM_NAMESPACE,
  '-f',
  helmValuesFile(l),
  ...extra,
  '--wait',
  '--timeout',
  '3m',
];

/** A pod whose one container holds one GPU from the `one-gpu` template. */
const oneGpuPod = (e: Exports, name: string): unknown =>
  podManifest(e, {
    name,
    claims: [{ name: 'gpu', template: 'one-gpu' }],
    containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
  });

const oneGpu = claimTemplate('one-gpu', [deviceRequest('gpu', 'gpu.nvidia.com', 1, [])]);

describe('fakegpu installed by its Helm chart', () => {
  let e: Exports;
  before(async () => {
    e = await helmCluster();
    apply(e, oneGpu);
  });
  after(() => {
    kubectl(e, ['delete', 'pods', '--all', '--wait=true', '--timeout=120s']);
    kubectl(e, ['delete', 'resourceclaims,resourceclaimtemplates', '--all']);
  });

  it("runs the plugin as the DaemonSet's pod from the imported image, registered with the kubelet, under the chart's security context", () => {
    const name = pluginPod(e);
    const pod = JSON.parse(mustKubectl(e, ['get', 'pod', '-n', HELM_NAMESPACE, name, '-o', 'json'])) as {
      spec: { containers: { image: string }[] };
      status: { phase: string; containerStatuses: { ready: boolean }[] };
    };
    assert.equal(pod.status.phase, 'Running');
    assert.equal(pod.status.containerStatuses[0]?.ready, true);
    assert.equal(pod.spec.containers[0]?.image, FAKEGPU_IMAGE);
    const registrar = join(l.kubeletRoot, 'plugins_registry');
    assert.ok(existsSync(join(registrar, 'gpu.nvidia.com-reg.sock')), readdirSync(registrar).join(' '));
    assert.deepEqual(
      devicesOf(slicesOf(e, HELM_NODE)).sort(),
      Array.from({ length: 8 }, (_, i) => `gpu-${i}`).sort(),
    );
    // Inside the container: no capability but MKNOD (bit 27), and the image's files read-only.
    const status = mustKubectl(e, ['exec', '-n', HELM_NAMESPACE, name, '--', 'cat', '/proc/1/status']);
    assert.match(status, /^CapEff:\s+0000000008000000$/m);
    assert.match(status, /^NoNewPrivs:\s+1$/m);
    const write = kubectl(e, ['exec', '-n', HELM_NAMESPACE, name, '--', 'sh', '-c', 'touch /opt/fakegpu/x']);
    assert.notEqual(write.code, 0);
    assert.match(write.err, /Read-only file system/);
  });

  it("publishes every KWOK node's GPUs from the fleet's pod, and the scheduler allocates them", async () => {
    for (let i = 0; i < HELM_KWOK_NODES; i++)
      assert.equal(devicesOf(slicesOf(e, `kwok-gpu-${i}`)).length, 8, `kwok-gpu-${i}`);
    // The fleet runs as nobody, with no capability at all.
    const fleet = mustKubectl(
      e,
      chartPodQuery('fakegpu-fleet', 'status.phase=Running', '{.items[0].metadata.name}'),
    ).trim();
    const status = mustKubectl(e, ['exec', '-n', HELM_NAMESPACE, fleet, '--', 'cat', '/proc/1/status']);
    assert.match(status, /^Uid:\s+65534\s/m);
    assert.match(status, /^CapEff:\s+0000000000000000$/m);
    const onKwok = oneGpuPod(e, 'on-kwok') as { spec: Record<string, unknown> };
    onKwok.spec['nodeSelector'] = { 'kubernetes.io/hostname': 'kwok-gpu-0' };
    onKwok.spec['tolerations'] = [{ key: KWOK_ANNOTATION, operator: 'Exists', effect: 'NoSchedule' }];
    apply(e, onKwok);
    await running(e, 'on-kwok');
    const claim = JSON.parse(
      mustKubectl(e, ['get', 'resourceclaim', podClaim(e, 'on-kwok', 'gpu'), '-o', 'json']),
    ) as { status: { allocation: { devices: { results: { pool: string }[] } } } };
    assert.equal(claim.status.allocation.devices.results[0]?.pool, 'kwok-gpu-0');
  });

  it('prepares a claim through the chart-installed plugin: the pod runs and sees exactly its GPU', async () => {
    apply(e, oneGpuPod(e, 'gpu-pod'));
    await running(e, 'gpu-pod');
    const uuids = allocatedUuids(e, podClaim(e, 'gpu-pod', 'gpu'));
    assert.equal(uuids.length, 1);
    const s = await seen(e, 'gpu-pod', 'main');
    assert.deepEqual(s.visible, uuids);
    assert.deepEqual(s.listed, uuids);
  });

  it('helm upgrade to other machines republishes the slices, and the running pod keeps its GPU', async () => {
    const before = pluginPod(e);
    const uuids = allocatedUuids(e, podClaim(e, 'gpu-pod', 'gpu'));
    // NVIDIA's rules keep MPS from dynamic MIG: the demo's MPSSupport goes with the upgrade.
    helmOf(
      chartWith('upgrade', [
        '--set',
        'dynamicMig=true',
        '--set',
        'featureGates=TimeSlicingSettings=true',
        '--set',
        'fleet.profile=dgx-b200',
      ]),
    );
    await eventually('a new plugin pod', () => {
      const now = kubectl(e, [
        'get',
        'pods',
        '-n',
        HELM_NAMESPACE,
        '-l',
        'app.kubernetes.io/name=fakegpu',
        `--field-selector=spec.nodeName=${HELM_NODE},status.phase=Running`,
        '-o',
        'name',
      ]).out.trim();
      return now !== '' && !now.endsWith(before) ? now : undefined;
    });
    // Dynamic MIG: counter sets beside the whole GPUs, which keep their names.
    await eventually('dynamic MIG slices on the node', () =>
      slicesOf(e, HELM_NODE).some((s) => (s.spec.sharedCounters ?? []).length > 0) ? true : undefined,
    );
    assert.ok(devicesOf(slicesOf(e, HELM_NODE)).length > 8);
    await eventually('B200 slices on the KWOK nodes', () =>
      slicesOf(e, 'kwok-gpu-1').some((s) =>
        (s.spec.devices ?? []).some((d) => d.attributes?.['productName']?.string === 'NVIDIA B200'),
      )
        ? true
        : undefined,
    );
    const pod = JSON.parse(mustKubectl(e, ['get', 'pod', 'gpu-pod', '-o', 'json'])) as {
      status: { phase: string; containerStatuses: { restartCount: number }[] };
    };
    assert.equal(pod.status.phase, 'Running');
    assert.equal(pod.status.containerStatuses[0]?.restartCount, 0);
    assert.deepEqual(seesNow(e, 'gpu-pod', 'main').listed, uuids);
    // The new plugin pod knows the claim the old one prepared: deleting the pod unprepares it.
    const claimUid = mustKubectl(e, [
      'get',
      'resourceclaim',
      podClaim(e, 'gpu-pod', 'gpu'),
      '-o',
      'jsonpath={.metadata.uid}',
    ]).trim();
    assert.ok(
      readdirSync(l.cdiDir).some((f) => f.includes(claimUid)),
      readdirSync(l.cdiDir).join(' '),
    );
    mustKubectl(e, ['delete', 'pod', 'gpu-pod', 'on-kwok', '--wait=true', '--timeout=120s']);
    assert.ok(!readdirSync(l.cdiDir).some((f) => f.includes(claimUid)), readdirSync(l.cdiDir).join(' '));
  });

  it('fleet.replicas=3 shards the KWOK nodes: each published once, and a deleted fleet pod hands over without a write', async () => {
    helmOf(chartWith('upgrade', ['--reuse-values', '--set', 'fleet.replicas=3']));
    const fleetPods = (): string[] =>
      mustKubectl(e, chartPodQuery('fakegpu-fleet', 'status.phase=Running', '{.items[*].metadata.name}'))
        .split(/\s+/)
        .filter(Boolean);
    type Lease = { metadata: { name: string }; spec?: { holderIdentity?: string } };
    const shardHolders = (): string[] =>
      (
        JSON.parse(
          mustKubectl(e, [
            'get',
            'leases',
            '-n',
            HELM_NAMESPACE,
            '-l',
            'fakegpu.dev/sharded-by',
            '-o',
            'json',
          ]),
        ) as { items: Lease[] }
      ).items
        .filter((x) => x.metadata.name.includes('-shard-'))
        .map((x) => x.spec?.holderIdentity ?? '');
    // Every shard held by a running pod (an identity is the pod's name and a suffix), each pod its share.
    const balanced = (): boolean => {
      const pods = fleetPods();
      const holders = shardHolders();
      return (
        pods.length === 3 &&
        holders.length === 60 &&
        pods.every((p) => holders.filter((h) => h.startsWith(`${p}_`)).length === 20)
      );
    };
    await eventually(
      'three fleet pods holding 20 shards each',
      () => (balanced() ? true : undefined),
      120_000,
    );
    type S = {
      metadata: { name: string; resourceVersion: string };
      spec: { nodeName: string; pool: { generation: number; resourceSliceCount: number } };
    };
    const kwokSlices = (): S[] =>
      (
        JSON.parse(
          mustKubectl(e, [
            'get',
            'resourceslices',
            '--field-selector=spec.driver=gpu.nvidia.com',
            '-o',
            'json',
          ]),
        ) as {
          items: S[];
        }
      ).items.filter((x) => x.spec.nodeName.startsWith('kwok-gpu-'));
    // Every KWOK node's pool whole: one generation, as many slices as each says (two writers' creates
    // would leave more); awaited, since the rollout's new pods may still be finishing the upgrade's pools.
    const incomplete = (xs: S[]): string[] =>
      Array.from({ length: HELM_KWOK_NODES }, (_, i) => `kwok-gpu-${i}`).flatMap((node) => {
        const pool = xs.filter((x) => x.spec.nodeName === node);
        const whole =
          pool.length > 0 &&
          pool.every(
            (x) =>
              x.spec.pool.resourceSliceCount === pool.length &&
              x.spec.pool.generation === pool[0]?.spec.pool.generation,
          );
        return whole
          ? []
          : [
              `${node}: ${pool.map((x) => `${x.metadata.name} g${x.spec.pool.generation}/${x.spec.pool.resourceSliceCount}`).join(', ')}`,
            ];
      });
    let last: string[] = [];
    try {
      await eventually(
        'every KWOK node published once',
        () => {
          last = incomplete(kwokSlices());
          return last.length === 0 ? true : undefined;
        },
        60_000,
      );
    } catch {
      assert.fail(`not one complete pool per node: ${last.join('; ')}`);
    }
    const before = kwokSlices();
    const victim = fleetPods()[0] ?? assert.fail('no fleet pod');
    mustKubectl(e, ['delete', 'pod', '-n', HELM_NAMESPACE, victim, '--wait=true', '--timeout=60s']);
    await eventually(
      'the replacement pod and every shard held again',
      () => (balanced() && !fleetPods().includes(victim) ? true : undefined),
      120_000,
    );
    const rv = (xs: S[]): string[] =>
      xs.map((x) => `${x.metadata.name}@${x.metadata.resourceVersion}`).sort();
    assert.deepEqual(rv(kwokSlices()), rv(before), 'the handover wrote nothing');
  });

  it('helm uninstall refuses while a pod holds a GPU the plugin prepared, since that pod could never stop', async () => {
    apply(e, oneGpuPod(e, 'holder'));
    await running(e, 'holder');
    const s = readState(l);
    assert.ok(s);
    const refused = helm(l, { bin: s.bin, cniBin: s.cniBin }, [
      'uninstall',
      HELM_RELEASE,
      '-n',
      HELM_NAMESPACE,
      '--wait',
      '--timeout',
      '3m',
    ]);
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.out + refused.err,
      /1 pod holds devices of gpu\.nvidia\.com on 1 plugin node: default\/holder; delete it/,
    );
    // Nothing was deleted: the plugin still serves the pod, whose deletion unprepares its GPU.
    pluginPod(e);
    assert.equal(devicesOf(slicesOf(e, HELM_NODE)).length > 0, true);
    mustKubectl(e, ['delete', 'pod', 'holder', '--wait=true', '--timeout=120s']);
  });

  it('helm uninstall leaves nothing of fakegpu: no pod, slice, DeviceClass, socket or CDI spec', async () => {
    helmOf(['uninstall', HELM_RELEASE, '-n', HELM_NAMESPACE, '--wait', '--timeout', '3m']);
    await eventually(
      'every fakegpu slice gone',
      () => {
        const left = JSON.parse(mustKubectl(e, ['get', 'resourceslices', '-o', 'json'])) as {
          items: Slice[];
        };
        return left.items.length === 0 ? true : undefined;
      },
      90_000,
    );
    assert.equal(mustKubectl(e, ['get', 'pods', '-n', HELM_NAMESPACE, '-o', 'name']).trim(), '');
    const classes = mustKubectl(e, ['get', 'deviceclasses', '-o', 'name']).trim();
    assert.equal(classes, '', classes);
    for (const dir of [join(l.kubeletRoot, 'plugins_registry'), l.cdiDir])
      assert.deepEqual(readdirSync(dir), [], dir);
    const plugins = join(l.kubeletRoot, 'plugins');
    for (const d of readdirSync(plugins))
      assert.ok(!readdirSync(join(plugins, d)).some((f) => f.endsWith('.sock')), `${plugins}/${d}`);
  });

  it("installs again after an uninstall: the plugin registers anew and publishes the node's GPUs", async () => {
    helmOf(chartWith('install'));
    await eventually('the plugin pod Ready (registered with the kubelet)', () =>
      mustKubectl(e, [
        'get',
        'pod',
        '-n',
        HELM_NAMESPACE,
        pluginPod(e),
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]).trim() === 'True'
        ? true
        : undefined,
    );
    await eventually("the node's GPUs published again", () =>
      devicesOf(slicesOf(e, HELM_NODE)).length === 8 ? true : undefined,
    );
    await eventually('the KWOK nodes published again', () =>
      devicesOf(slicesOf(e, 'kwok-gpu-0')).length === 8 ? true : undefined,
    );
  });
});
