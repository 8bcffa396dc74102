import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { layout } from '../../src/local-cluster/config.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import {
  allocatedUuids,
  apply,
  claimTemplate,
  deviceRequest,
  E2E_CLUSTER_DIR,
  E2E_HELM,
  E2E_NODE,
  cleanup,
  e2eCluster,
  podClaim,
  pluginHttp,
  podManifest,
  running,
  seen,
} from '../support/e2e.js';

/**
 * Pods with claims on a node that fakegpu's plugin makes a DGX H100: scheduled by the real scheduler,
 * prepared through the kubelet's DRA calls, started by containerd with our CDI specs.
 */
const oneGpu = (name: string, selector?: string): unknown =>
  claimTemplate(name, [deviceRequest('gpu', 'gpu.nvidia.com', 1, selector ? [selector] : [])]);

const cdiSpecs = (): string[] =>
  readdirSync(layout(E2E_CLUSTER_DIR).cdiDir).filter((f) => f.endsWith('.yaml'));

describe('pods on a fake DGX H100 node', () => {
  let e: Exports;
  before(async () => {
    e = await e2eCluster();
    apply(
      e,
      oneGpu('one-gpu'),
      oneGpu('gpu-at-df', "device.attributes['resource.kubernetes.io'].pciBusID == '0000:df:00.0'"),
    );
  });
  after(() => {
    cleanup(e);
  });

  it('gives two pods one GPU each, different ones, and each container sees exactly its GPU', async () => {
    for (const name of ['solo-a', 'solo-b']) {
      apply(
        e,
        podManifest(e, {
          name,
          claims: [{ name: 'gpu', template: 'one-gpu' }],
          containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
        }),
      );
    }
    await running(e, 'solo-a');
    await running(e, 'solo-b');
    const a = allocatedUuids(e, podClaim(e, 'solo-a', 'gpu'));
    const b = allocatedUuids(e, podClaim(e, 'solo-b', 'gpu'));
    assert.equal(a.length, 1);
    assert.equal(b.length, 1);
    assert.notDeepEqual(a, b);
    for (const [pod, uuids] of [
      ['solo-a', a],
      ['solo-b', b],
    ] as const) {
      const s = await seen(e, pod, 'main');
      assert.deepEqual(s.visible, uuids, `${pod} NVIDIA_VISIBLE_DEVICES`);
      assert.deepEqual(s.listed, uuids, `${pod} nvidia-smi -L`);
      assert.ok(
        s.devNodes.includes('nvidiactl') && s.devNodes.some((n) => /^nvidia\d$/.test(n)),
        s.devNodes.join(' '),
      );
    }
  });

  it('shares one claim between two containers', async () => {
    apply(e, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name: 'shared-pair', namespace: 'default' },
      spec: {
        devices: { requests: [{ name: 'gpus', exactly: { deviceClassName: 'gpu.nvidia.com', count: 2 } }] },
      },
    });
    apply(
      e,
      podManifest(e, {
        name: 'sharing',
        claims: [{ name: 'gpus', claim: 'shared-pair' }],
        containers: [
          { name: 'one', claims: [{ name: 'gpus' }] },
          { name: 'two', claims: [{ name: 'gpus' }] },
        ],
      }),
    );
    await running(e, 'sharing');
    const uuids = allocatedUuids(e, 'shared-pair');
    assert.equal(uuids.length, 2);
    for (const c of ['one', 'two']) {
      const s = await seen(e, 'sharing', c);
      assert.deepEqual([...s.visible].sort(), [...uuids].sort(), c);
      assert.deepEqual([...s.listed].sort(), [...uuids].sort(), c);
    }
  });

  it('allocates the GPU a CEL selector picks (by PCI bus ID)', async () => {
    apply(
      e,
      podManifest(e, {
        name: 'picky',
        claims: [{ name: 'gpu', template: 'gpu-at-df' }],
        containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
      }),
    );
    await running(e, 'picky');
    const claim = JSON.parse(
      mustKubectl(e, ['get', 'resourceclaim', podClaim(e, 'picky', 'gpu'), '-o', 'json']),
    ) as { status: { allocation: { devices: { results: { device: string }[] } } } };
    assert.deepEqual(
      claim.status.allocation.devices.results.map((r) => r.device),
      ['gpu-7'],
    );
    const s = await seen(e, 'picky', 'main');
    assert.match(
      mustKubectl(e, [
        'exec',
        'picky',
        '--',
        'nvidia-smi',
        '--query-gpu=pci.bus_id',
        '--format=csv,noheader',
      ]),
      /^00000000:DF:00\.0\n$/,
    );
    assert.equal(s.listed.length, 1);
  });

  it("honours NVIDIA's time-slicing config and rejects a bad interval with an event", async () => {
    const ts = (name: string, interval: string): unknown => ({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name, namespace: 'default' },
      spec: {
        devices: {
          requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.nvidia.com' } }],
          config: [
            {
              requests: ['gpu'],
              opaque: {
                driver: 'gpu.nvidia.com',
                parameters: {
                  apiVersion: 'resource.nvidia.com/v1beta1',
                  kind: 'GpuConfig',
                  sharing: { strategy: 'TimeSlicing', timeSlicingConfig: { interval } },
                },
              },
            },
          ],
        },
      },
    });
    apply(e, ts('sliced', 'Long'), ts('sliced-badly', 'Forever'));
    apply(
      e,
      podManifest(e, {
        name: 'sliced',
        claims: [{ name: 'gpu', claim: 'sliced' }],
        containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
      }),
    );
    apply(
      e,
      podManifest(e, {
        name: 'sliced-badly',
        claims: [{ name: 'gpu', claim: 'sliced-badly' }],
        containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
      }),
    );
    await running(e, 'sliced');
    assert.match(
      mustKubectl(e, ['exec', 'sliced', '--', 'nvidia-smi', '-q']),
      /Compute Policy Timeslice +: Long/,
    );
    const event = await eventually('a FailedPrepareDynamicResources event', () => {
      const out = kubectl(e, [
        'get',
        'events',
        '--field-selector',
        'involvedObject.name=sliced-badly,reason=FailedPrepareDynamicResources',
        '-o',
        'jsonpath={.items[*].message}',
      ]).out;
      return out.includes('unknown time-slice interval') ? out : undefined;
    });
    assert.match(
      event,
      /unknown time-slice interval: Forever, supported time-slice intervals: Default, Short, Medium, Long/,
    );
    assert.notEqual(
      kubectl(e, ['get', 'pod', 'sliced-badly', '-o', 'jsonpath={.status.phase}']).out,
      'Running',
    );
  });

  it('unprepares when the pod goes: the CDI spec is removed', async () => {
    apply(
      e,
      podManifest(e, {
        name: 'brief',
        claims: [{ name: 'gpu', template: 'one-gpu' }],
        containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
      }),
    );
    await running(e, 'brief');
    const uid = mustKubectl(e, [
      'get',
      'resourceclaim',
      podClaim(e, 'brief', 'gpu'),
      '-o',
      'jsonpath={.metadata.uid}',
    ]);
    const spec = join(layout(E2E_CLUSTER_DIR).cdiDir, `k8s.gpu.nvidia.com-claim_${uid}.yaml`);
    assert.ok(existsSync(spec));
    mustKubectl(e, ['delete', 'pod', 'brief', '--wait=true', '--timeout=60s']);
    await eventually('the CDI spec to go', () => (existsSync(spec) ? undefined : true));
    assert.ok(!cdiSpecs().includes(`k8s.gpu.nvidia.com-claim_${uid}.yaml`));
  });
});

describe('fakegpu demo (the README main command)', () => {
  it(
    'runs a pod that claims a GPU and prints the GPU it got',
    {
      skip: E2E_HELM && '`fakegpu demo` starts a cluster of host processes; the chart has test/e2e-helm',
    },
    async () => {
      await e2eCluster();
      const bin = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bin', 'fakegpu.js');
      const r = spawnSync(
        process.execPath,
        [bin, 'demo', '--dir', E2E_CLUSTER_DIR, '--node', E2E_NODE, '--profile', 'dgx-h100'],
        { encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.match(
        r.stdout,
        /^Pod fakegpu-demo on node fakegpu-e2e-node \(dgx-h100\) was allocated fakegpu-e2e-node\/gpu-\d and saw:\n/,
      );
      assert.match(r.stdout, /NVIDIA_VISIBLE_DEVICES=GPU-[0-9a-f-]{36}\n/);
      assert.match(r.stdout, /\$ nvidia-smi -L\nGPU 0: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f-]{36}\)\n/);
      assert.match(r.stdout, /NVIDIA-SMI 580\.126\.20/);
    },
  );
});

describe('plugin health and metrics', () => {
  it('serves /healthz, /readyz and Prometheus metrics with prepare counts and published devices', async () => {
    const e = await e2eCluster();
    const get = (path: string): Promise<{ status: number; text: string }> => pluginHttp(e, path);
    assert.deepEqual(await get('/healthz'), { status: 200, text: 'ok\n' });
    assert.deepEqual(await get('/readyz'), { status: 200, text: 'ok\n' });
    const metrics = (await get('/metrics')).text;
    assert.match(
      metrics,
      /^fakegpu_dra_requests_total\{method="NodePrepareResources",result="success"\} [1-9]\d*$/m,
    );
    assert.match(
      metrics,
      /^fakegpu_dra_request_duration_seconds_bucket\{le="0\.1",method="NodePrepareResources"\} \d+$/m,
    );
    assert.match(metrics, /^fakegpu_published_devices{driver="gpu.nvidia.com"} 8$/m);
    assert.match(metrics, /^fakegpu_published_devices{driver="dra.net"} 8$/m);
  });
});
