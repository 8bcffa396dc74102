import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { clusterRestart, type Exports } from '../../src/local-cluster/cluster.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { hitsOn, nvmlFaultList } from '../../src/model/fault/apply.js';
import { parseGpuFault } from '../../src/model/fault/resource.js';
import { expectedTaints } from '../../src/model/health/expected.js';
import { gpuSkeleton } from '../../src/model/health/gpus.js';
import { ignoredXids } from '../../src/model/health/taints.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { modelNode } from '../../src/model/render.js';
import { eventually, kubectl, kwokNodeNames, mustKubectl, nodeReady } from '../support/cluster.js';
import { dashboardPanels, forAllNodes, TestPrometheus } from '../support/prometheus.js';
import {
  apply,
  claimTemplate,
  deviceRequest,
  cleanup,
  failedScheduling,
  FAULTS_CLUSTER_DIR,
  FAULTS_KWOK_NODES,
  FAULTS_NODE,
  faultsCluster,
  podClaim,
  podManifest,
  running,
} from '../support/e2e.js';

/**
 * GPU failures end to end: faults injected through `fakegpu fault`, reported by NVIDIA's health monitor
 * (emulated over the mock NVML) as device taints that the real scheduler, kubelet and device taint
 * eviction controller act on; and the same faults across a fleet of KWOK nodes.
 */

interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}
interface SliceDevice {
  name: string;
  attributes?: Record<string, { string?: string }>;
  taints?: Taint[];
}
interface Slice {
  spec: { nodeName: string; devices?: SliceDevice[] };
}

const log = (l: string): void => {
  process.stderr.write(`fakegpu: ${l}\n`);
};

function fakegpu(e: Exports, ...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'fakegpu.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, KUBECONFIG: e.KUBECONFIG },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function mustFakegpu(e: Exports, ...args: string[]): string {
  const r = fakegpu(e, ...args);
  assert.equal(r.code, 0, `fakegpu ${args.join(' ')}: ${r.err}`);
  return r.out.trim();
}

function slices(e: Exports, node?: string): Slice[] {
  const args = ['get', 'resourceslices', '-o', 'json', '--field-selector=spec.driver=gpu.nvidia.com'];
  if (node) args[4] = `--field-selector=spec.driver=gpu.nvidia.com,spec.nodeName=${node}`;
  return (JSON.parse(mustKubectl(e, args)) as { items: Slice[] }).items;
}

function devices(e: Exports, node: string): SliceDevice[] {
  return slices(e, node).flatMap((s) => s.spec.devices ?? []);
}

const device = (e: Exports, name: string): SliceDevice | undefined =>
  devices(e, FAULTS_NODE).find((d) => d.name === name);

const busId = (e: Exports, name: string): string =>
  device(e, name)?.attributes?.['resource.kubernetes.io/pciBusID']?.string ?? '';

/** A claim template for `count` GPUs, optionally one by PCI bus ID, optionally tolerating a taint key. */
function gpus(name: string, count: number, o: { busId?: string; tolerate?: string } = {}): unknown {
  return claimTemplate(name, [
    deviceRequest(
      'gpus',
      'gpu.nvidia.com',
      count,
      o.busId ? [`device.attributes['resource.kubernetes.io'].pciBusID == '${o.busId}'`] : [],
      {
        allocationMode: 'ExactCount',
        ...(o.tolerate ? { tolerations: [{ key: o.tolerate, operator: 'Exists' }] } : {}),
      },
    ),
  ]);
}

function pod(e: Exports, name: string, template: string): unknown {
  return podManifest(e, {
    name,
    claims: [{ name: 'gpus', template }],
    containers: [{ name: 'main', claims: [{ name: 'gpus' }] }],
  });
}

/** The pod's `allocatedResourcesStatus` resources of its first container. */
function resourceHealth(
  e: Exports,
  name: string,
): { resourceID: string; health: string; message?: string }[] {
  const p = JSON.parse(mustKubectl(e, ['get', 'pod', name, '-o', 'json'])) as {
    status?: {
      containerStatuses?: {
        allocatedResourcesStatus?: {
          resources?: { resourceID: string; health: string; message?: string }[];
        }[];
      }[];
    };
  };
  return (p.status?.containerStatuses?.[0]?.allocatedResourcesStatus ?? []).flatMap((s) => s.resources ?? []);
}

describe('GPU failures as NVIDIA reports them', () => {
  let e: Exports;
  before(async () => {
    e = await faultsCluster();
  });
  after(() => {
    mustFakegpu(e, 'fault', 'clear', '--all');
    cleanup(e);
  });

  it("XID 79 on gpu-3: exactly NVIDIA's taint within 5 s; claims that do not tolerate it wait, one that does runs; a running pod turns Unhealthy and a NoExecute rule evicts it", async () => {
    apply(e, gpus('on-gpu3', 1, { busId: busId(e, 'gpu-3') }));
    apply(e, pod(e, 'victim', 'on-gpu3'));
    await running(e, 'victim');
    const claim = podClaim(e, 'victim', 'gpus');
    await eventually('the running pod reported Healthy', () =>
      resourceHealth(e, 'victim').some((r) => r.health === 'Healthy') ? true : undefined,
    );

    const t0 = Date.now();
    mustFakegpu(
      e,
      'fault',
      'inject',
      '--name',
      'xid79',
      '--node',
      FAULTS_NODE,
      '--device',
      'gpu-3',
      '--xid',
      '79',
    );
    const tainted = await eventually('gpu-3 tainted', () => device(e, 'gpu-3')?.taints, 5_000);
    log(`XID 79 to taint: ${Date.now() - t0} ms`);
    assert.deepEqual(
      tainted.map(({ key, value, effect }) => ({ key, value, effect })),
      [{ key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' }],
    );
    assert.match(tainted[0]?.timeAdded ?? '', /^\d{4}-\d\d-\d\dT/, 'the API server stamped the time');
    assert.deepEqual(
      devices(e, FAULTS_NODE)
        .filter((d) => d.taints)
        .map((d) => d.name),
      ['gpu-3'],
    );

    // The kubelet learns it from the health stream: the running pod's status says so.
    const health = await eventually(
      'the pod reported Unhealthy',
      () => {
        const r = resourceHealth(e, 'victim');
        return r.some((x) => x.health === 'Unhealthy') ? r : undefined;
      },
      60_000,
    );
    assert.equal(health[0]?.message, 'critical XID 79 reported by NVML');

    apply(e, gpus('all-eight', 8), gpus('all-eight-tolerant', 8, { tolerate: 'gpu.nvidia.com/xid' }));
    apply(e, pod(e, 'eight', 'all-eight'));
    const why = await failedScheduling(e, 'eight');
    log(`scheduler: ${why}`);
    assert.match(why, /cannot allocate all claims/);

    // A NoExecute rule on the failed device evicts the pod that uses it.
    apply(e, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'DeviceTaintRule',
      metadata: { name: 'evict-gpu3' },
      spec: {
        deviceSelector: { driver: 'gpu.nvidia.com', pool: FAULTS_NODE, device: 'gpu-3' },
        taint: { key: 'example.com/remediate', value: 'xid-79', effect: 'NoExecute' },
      },
    });
    const reason = await eventually(
      'the pod marked for eviction',
      () => {
        const r = kubectl(e, [
          'get',
          'pod',
          'victim',
          '-o',
          'jsonpath={.status.conditions[?(@.type=="DisruptionTarget")].reason}',
        ]);
        if (r.code !== 0) return 'gone';
        return r.out || undefined;
      },
      60_000,
    );
    if (reason !== 'gone') assert.equal(reason, 'DeletionByDeviceTaintManager');
    await eventually(
      'the pod deleted',
      () => (kubectl(e, ['get', 'pod', 'victim']).code !== 0 ? true : undefined),
      60_000,
    );
    mustKubectl(e, ['delete', 'devicetaintrule', 'evict-gpu3']);
    await eventually('the claim released', () =>
      kubectl(e, ['get', 'resourceclaim', claim]).code !== 0 ? true : undefined,
    );
    kubectl(e, ['delete', 'pod', 'eight', '--wait=true']);

    apply(e, pod(e, 'eight-tolerant', 'all-eight-tolerant'));
    await running(e, 'eight-tolerant');
    kubectl(e, ['delete', 'pod', 'eight-tolerant', '--wait=true']);
  });

  it('XID 13 on gpu-5: effect None, and a new claim still gets gpu-5', async () => {
    mustFakegpu(
      e,
      'fault',
      'inject',
      '--name',
      'xid13',
      '--node',
      FAULTS_NODE,
      '--device',
      'gpu-5',
      '--xid',
      '13',
    );
    const t = await eventually('gpu-5 tainted', () => device(e, 'gpu-5')?.taints, 5_000);
    assert.deepEqual(
      t.map(({ key, value, effect }) => ({ key, value, effect })),
      [{ key: 'gpu.nvidia.com/xid', value: '13', effect: 'None' }],
    );
    apply(e, gpus('on-gpu5', 1, { busId: busId(e, 'gpu-5') }), pod(e, 'on-five', 'on-gpu5'));
    await running(e, 'on-five');
    kubectl(e, ['delete', 'pod', 'on-five', '--wait=true']);
  });

  it('GPU lost: every device tainted, and nvidia-smi in a running pod fails as a real one does', async () => {
    apply(e, gpus('on-gpu0', 1, { busId: busId(e, 'gpu-0') }), pod(e, 'on-zero', 'on-gpu0'));
    await running(e, 'on-zero');
    mustFakegpu(
      e,
      'fault',
      'inject',
      '--name',
      'lost',
      '--node',
      FAULTS_NODE,
      '--device',
      'gpu-0',
      '--gpu-lost',
    );
    await eventually(
      'every device tainted gpu-lost',
      () =>
        devices(e, FAULTS_NODE).every((d) =>
          d.taints?.some((t) => t.key === 'gpu.nvidia.com/gpu-lost' && t.effect === 'NoSchedule'),
        )
          ? true
          : undefined,
      5_000,
    );
    const smi = await eventually('nvidia-smi failing', () => {
      const r = kubectl(e, ['exec', 'on-zero', '--', 'sh', '-c', 'nvidia-smi; echo "exit=$?"']);
      return r.out.includes('exit=15') ? r.out : undefined;
    });
    assert.match(
      smi,
      /^Unable to determine the device handle for GPU0: [0-9A-F:.]+: GPU is lost\. {2}Reboot the system to recover this GPU\n/,
    );
    kubectl(e, ['delete', 'pod', 'on-zero', '--wait=true']);
  });

  it('fault clear and a plugin restart: taints gone, every GPU allocatable again', async () => {
    mustFakegpu(e, 'fault', 'clear', 'xid79', 'xid13', 'lost');
    assert.ok(device(e, 'gpu-0')?.taints, 'NVIDIA keeps taints until the plugin restarts');
    await clusterRestart(FAULTS_CLUSTER_DIR, 'fakegpu-plugin', log);
    await eventually('the node Ready again', () => (nodeReady(e, FAULTS_NODE) ? true : undefined));
    await eventually('no taint left', () => {
      const d = devices(e, FAULTS_NODE);
      return d.length === 8 && d.every((x) => !x.taints) ? true : undefined;
    });
    apply(e, pod(e, 'eight-again', 'all-eight'));
    await running(e, 'eight-again');
    kubectl(e, ['delete', 'pod', 'eight-again', '--wait=true']);
  });

  it(`the fleet: a seeded fault on 1% of ${FAULTS_KWOK_NODES * 8} KWOK GPUs, every taint published, pods avoid them`, async () => {
    const t0 = Date.now();
    mustFakegpu(
      e,
      'fault',
      'inject',
      '--name',
      'fleet-xid',
      '--selector',
      'type=kwok',
      '--fraction',
      '0.01',
      '--seed',
      '7',
      '--xid',
      '79',
    );
    // What the seeded fault must hit, by the same rules, computed here from the node names alone.
    const kwok = kwokNodeNames(e);
    assert.equal(kwok.length, FAULTS_KWOK_NODES);
    const model = modelNode(resolveProfile('dgx-h100'), {
      nodeName: 'template',
      dynamicMig: false,
      driverName: 'gpu.nvidia.com',
      kubernetesVersion: { major: 1, minor: 37, patch: 0 },
      release: '0.5',
    });
    const skeleton = gpuSkeleton(model.machine, model.devices);
    const spec = parseGpuFault(JSON.parse(mustKubectl(e, ['get', 'gpufault', 'fleet-xid', '-o', 'json'])));
    const want = kwok
      .flatMap((n) => {
        const gpus = skeleton.gpus(n);
        const hits = hitsOn([spec], { name: n, labels: { type: 'kwok' } }, gpus, new Date());
        return [...expectedTaints(gpus, nvmlFaultList(hits), ignoredXids('')).keys()].map((d) => `${n}/${d}`);
      })
      .sort();
    const gpuCount = FAULTS_KWOK_NODES * 8;
    // 1% of 8,000 is 80; the binomial spread makes 50..110 far beyond four standard deviations.
    assert.ok(want.length >= 50 && want.length <= 110, `${want.length} GPUs hit of ${gpuCount}`);
    const tainted79 = (): string[] =>
      slices(e)
        .filter((s) => s.spec.nodeName !== FAULTS_NODE)
        .flatMap((s) =>
          (s.spec.devices ?? [])
            .filter((d) =>
              d.taints?.some(
                (t) => t.key === 'gpu.nvidia.com/xid' && t.value === '79' && t.effect === 'NoSchedule',
              ),
            )
            .map((d) => `${s.spec.nodeName}/${d.name}`),
        )
        .sort();
    await eventually(
      'exactly the chosen GPUs tainted',
      () => (JSON.stringify(tainted79()) === JSON.stringify(want) ? true : undefined),
      120_000,
    );
    log(`fleet fault published in ${Date.now() - t0} ms`);
    const status = await eventually(
      'the status naming every hit, published, and counting them',
      () => {
        const f = JSON.parse(mustKubectl(e, ['get', 'gpufault', 'fleet-xid', '-o', 'json'])) as {
          status?: {
            nodes?: Record<string, { devices?: { name: string; publishedAt?: string }[] }>;
            hits?: number;
            nodesHit?: number;
          };
        };
        const nodes = f.status?.nodes ?? {};
        const hit = Object.entries(nodes)
          .flatMap(([node, n]) =>
            (n.devices ?? []).filter((d) => d.publishedAt).map((d) => `${node}/${d.name}`),
          )
          .sort();
        // Fewer than the 100 nodes and 256 devices a fleet lists: every hit is listed, and counted.
        const counted =
          f.status?.hits === want.length &&
          f.status.nodesHit === new Set(want.map((w) => w.split('/')[0])).size;
        return JSON.stringify(hit) === JSON.stringify(want) && counted ? nodes : undefined;
      },
      60_000,
    );

    // On a hit node, all eight GPUs cannot be had; the untainted ones can.
    const [node = '', ...rest] = Object.keys(status);
    assert.ok(rest.length >= 0);
    const tainted = status[node]?.devices?.length ?? 0;
    const onNode = (name: string, template: string): unknown => {
      const p = pod(e, name, template) as { spec: Record<string, unknown> };
      p.spec['nodeSelector'] = { 'kubernetes.io/hostname': node };
      p.spec['tolerations'] = [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }];
      return p;
    };
    apply(
      e,
      gpus('fleet-free', 8 - tainted),
      onNode('fleet-free', 'fleet-free'),
      onNode('fleet-eight', 'all-eight'),
    );
    await running(e, 'fleet-free');
    assert.match(await failedScheduling(e, 'fleet-eight'), /cannot allocate all claims/);
    kubectl(e, ['delete', 'pod', 'fleet-free', 'fleet-eight', '--wait=true']);
  });
});

/**
 * dcgm-exporter's view of the same cluster, through a real Prometheus (built from its Go module like
 * the cluster's components) scraping the node plugin and the fleet: a pod's annotated load, an injected
 * XID on the plugin's node and on a KWOK node, and every fleet GPU; each exposition also passes
 * promtool's parser.
 */
describe('GPU metrics as dcgm-exporter serves them, scraped by Prometheus', () => {
  let e: Exports;
  let prometheus: TestPrometheus | null = null;
  before(async () => {
    e = await faultsCluster();
    mustFakegpu(e, 'fault', 'clear', '--all');
  });
  after(() => {
    prometheus?.stop();
    mustFakegpu(e, 'fault', 'clear', '--all');
    cleanup(e);
  });

  it("a pod's annotated utilisation, injected XIDs and the fleet's 8,000 GPUs, queried from Prometheus", async () => {
    const p8s = (prometheus = await TestPrometheus.create(log));
    const plugin = new URL(e.FAKEGPU_DCGM_URL ?? '');
    const fleet = new URL(e.FAKEGPU_FLEET_DCGM_URL ?? '');
    const p = pod(e, 'dcgm-pod', 'one') as { metadata: Record<string, unknown> };
    p.metadata['annotations'] = { 'fakegpu.dev/gpu-util': '85' };
    apply(e, gpus('one', 1), p);
    await running(e, 'dcgm-pod');
    mustFakegpu(
      e,
      'fault',
      'inject',
      '--name',
      'dcgm-xid',
      '--node',
      FAULTS_NODE,
      '--device',
      'gpu-1',
      '--xid',
      '48',
    );
    mustFakegpu(
      e,
      'fault',
      'inject',
      '--name',
      'dcgm-kwok',
      '--node',
      'kwok-gpu-3',
      '--device',
      'gpu-2',
      '--xid',
      '74',
    );

    // The expositions as a parser reads them: promtool's, without its naming lint (dcgm-exporter's own
    // names are not snake_case and its counters lack _total, which the lint would report of it too).
    for (const url of [plugin, fleet]) {
      const body = await (await fetch(url)).text();
      const r = spawnSync(join(p8s.bin, 'promtool'), ['check', 'metrics', '--lint=none', '--extended'], {
        input: body,
        encoding: 'utf8',
      });
      assert.equal(r.status, 0, `${url.href}: ${r.stderr}`);
      assert.equal(r.stderr, '');
    }

    // The fleet's own /metrics too, for the scorecard's panels.
    p8s.start({ plugin: plugin.host, fleet: fleet.host, scorecard: new URL(e.FAKEGPU_FLEET_UI ?? '').host });
    const query = (q: string): ReturnType<TestPrometheus['query']> => p8s.query(q);
    const until = <T>(what: string, f: () => Promise<T | undefined>): Promise<T> => p8s.until(what, f);
    const util = await until('the pod’s GPU in Prometheus', async () => {
      const r = await query('DCGM_FI_DEV_GPU_UTIL{pod="dcgm-pod"}');
      return r.length === 1 ? r[0] : undefined;
    });
    assert.equal(util.value[1], '85');
    assert.equal(util.metric['namespace'], 'default');
    assert.equal(util.metric['container'], 'main');
    assert.equal(util.metric['dra_driver_name'], 'gpu.nvidia.com');
    assert.equal(util.metric['hostname'], FAULTS_NODE);
    const xid = await until('XID 48 on the plugin node', async () => {
      const r = await query(`DCGM_FI_DEV_XID_ERRORS{hostname="${FAULTS_NODE}",err_code="48"}`);
      return r.length === 1 ? r[0] : undefined;
    });
    assert.equal(xid.metric['gpu'], '1');
    assert.equal(xid.metric['err_msg'], 'Double Bit ECC Error');
    const kwokXid = await until('XID 74 on a KWOK node', async () => {
      const r = await query('DCGM_FI_DEV_XID_ERRORS{hostname="kwok-gpu-3",err_code="74"}');
      return r.length === 1 ? r[0] : undefined;
    });
    assert.equal(kwokXid.metric['gpu'], '2');
    const fleetGpus = await until('every fleet GPU', async () => {
      const r = await query('count(DCGM_FI_DEV_GPU_UTIL{job="fleet"})');
      return r[0]?.value[1];
    });
    assert.equal(fleetGpus, String(FAULTS_KWOK_NODES * 8));
    // The chart's Grafana dashboard: every panel's query returns series here (all nodes selected), but
    // MIG instances', which needs a GPU in MIG mode and this cluster has none (the dynamic MIG e2e's).
    const panels = dashboardPanels().filter((x) => !x.targets.some((t) => t.expr.includes('GPU_I_PROFILE')));
    assert.equal(panels.length, dashboardPanels().length - 1);
    for (const x of panels)
      for (const t of x.targets)
        await until(`series for the dashboard's panel "${x.title}"`, async () => {
          const r = await query(forAllNodes(t.expr));
          return r.length > 0 ? r : undefined;
        });
    // Both targets scraped without an error: Prometheus's own parser accepted every line.
    const targets = await p8s.targets();
    assert.deepEqual(targets.map((t) => [t.labels.job, t.health, t.lastError]).sort(), [
      ['fleet', 'up', ''],
      ['plugin', 'up', ''],
      ['scorecard', 'up', ''],
    ]);
  });
});
