import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import {
  allocatedDevices,
  apply,
  cleanup,
  deviceRequest,
  NVIDIA_NODE,
  nvidiaCluster,
  podClaim,
  podManifest,
  running,
} from '../support/e2e.js';

interface SliceDevice {
  name: string;
  attributes?: Record<string, { string?: string; int?: number; ints?: number[] }>;
  capacity?: Record<string, { value: string; requestPolicy?: unknown }>;
  allowMultipleAllocations?: boolean;
}

const GPU = 'gpu.nvidia.com';

function devices(e: Exports): SliceDevice[] {
  const list = JSON.parse(
    mustKubectl(e, [
      'get',
      'resourceslices',
      `--field-selector=spec.nodeName=${NVIDIA_NODE},spec.driver=${GPU}`,
      '-o',
      'json',
    ]),
  ) as { items: { spec: { devices?: SliceDevice[] } }[] };
  return list.items.flatMap((s) => s.spec.devices ?? []);
}

const busOf = (e: Exports, name: string): string =>
  devices(e).find((d) => d.name === name)?.attributes?.['resource.kubernetes.io/pciBusID']?.string ?? '';

/** A selector for one GPU's devices by its PCI address (a GPU and its VFIO sibling share it). */
const onBus = (bus: string): string => `device.attributes['resource.kubernetes.io'].pciBusID == '${bus}'`;

function claimTemplate(name: string, requests: unknown[], extra: Record<string, unknown> = {}): unknown {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name, namespace: 'default' },
    spec: { spec: { devices: { requests, ...extra } } },
  };
}

function pod(e: Exports, name: string, template: string, command?: string): unknown {
  return podManifest(e, {
    name,
    claims: [{ name: 'dev', template }],
    containers: [{ name: 'main', claims: [{ name: 'dev' }], ...(command ? { command } : {}) }],
  });
}

function gone(e: Exports, ...pods: string[]): void {
  mustKubectl(e, ['delete', 'pod', '--wait=true', '--timeout=90s', ...pods]);
}

function scheduled(e: Exports, name: string): string {
  return kubectl(e, [
    'get',
    'pod',
    name,
    '-o',
    'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}',
  ]).out;
}

function prepareEvent(e: Exports, name: string, text: string): Promise<string> {
  return eventually(
    `a FailedPrepareDynamicResources event on ${name}`,
    () => {
      const out = kubectl(e, [
        'get',
        'events',
        '--field-selector',
        `involvedObject.name=${name},reason=FailedPrepareDynamicResources`,
        '-o',
        'jsonpath={.items[*].message}',
      ]).out;
      return out.includes(text) ? out : undefined;
    },
    90_000,
  );
}

/**
 * NVIDIA's driver as v0.5.0 deploys it with its newer gates on, against the real scheduler and kubelet:
 * consumable shares, VFIO passthrough, Fabric Manager partitions, list attributes, and DRANET's claim
 * status for NICs.
 */
describe('NVIDIA v0.5.0 gates on a fake DGX H100', () => {
  let e: Exports;
  before(async () => {
    e = await nvidiaCluster();
  });
  after(() => {
    cleanup(e);
  });

  it('publishes shares, VFIO siblings, Fabric Manager partitions and numaNode lists', () => {
    const d = devices(e);
    const gpus = d.filter((x) => /^gpu-\d$/.test(x.name));
    assert.equal(gpus.length, 8);
    assert.ok(gpus.every((g) => g.allowMultipleAllocations === true));
    assert.ok(gpus.every((g) => g.capacity?.['memory']?.requestPolicy !== undefined));
    assert.deepEqual(
      d.filter((x) => x.name.startsWith('gpu-vfio-')).map((x) => x.name),
      [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `gpu-vfio-${i}`),
    );
    const a = gpus.find((g) => g.name === 'gpu-4')?.attributes ?? {};
    assert.deepEqual(a['resource.kubernetes.io/numaNode'], { ints: [1] });
    assert.equal(a['gpuModuleID']?.int, 1);
    assert.equal(a['partition4']?.int, 1);
  });

  it('the scheduler matches a list numaNode and a Fabric Manager partition chosen by CEL', async () => {
    apply(
      e,
      claimTemplate(
        'pair',
        [
          deviceRequest('a', GPU, 1, ["device.attributes['gpu.nvidia.com'].partition2 == 6"]),
          deviceRequest('b', GPU, 1, ["device.attributes['gpu.nvidia.com'].partition2 == 6"]),
        ],
        { constraints: [{ requests: ['a', 'b'], matchAttribute: 'resource.kubernetes.io/numaNode' }] },
      ),
      claimTemplate('quad', [
        deviceRequest('gpus', GPU, 4, ["device.attributes['gpu.nvidia.com'].partition4 == 1"]),
      ]),
      pod(e, 'pair', 'pair'),
      pod(e, 'quad', 'quad'),
    );
    await running(e, 'pair');
    await running(e, 'quad');
    assert.deepEqual(
      allocatedDevices(e, podClaim(e, 'pair', 'dev'))
        .map((x) => x.name)
        .sort(),
      ['gpu-2', 'gpu-3'],
    );
    assert.deepEqual(
      allocatedDevices(e, podClaim(e, 'quad', 'dev'))
        .map((x) => x.name)
        .sort(),
      ['gpu-4', 'gpu-5', 'gpu-6', 'gpu-7'],
    );
    gone(e, 'pair', 'quad');
  });

  it('two 30Gi shares of one H100 run together, a third waits, MPS is refused, the last unprepare frees it', async () => {
    const bus = busOf(e, 'gpu-0');
    const share = deviceRequest('gpu', GPU, 1, [onBus(bus)], { capacity: { requests: { memory: '30Gi' } } });
    apply(
      e,
      claimTemplate('share', [share]),
      claimTemplate('mps', [deviceRequest('gpu', GPU, 1, [onBus(busOf(e, 'gpu-1'))])], {
        config: [
          {
            opaque: {
              driver: GPU,
              parameters: {
                apiVersion: 'resource.nvidia.com/v1beta1',
                kind: 'GpuConfig',
                sharing: { strategy: 'MPS' },
              },
            },
          },
        ],
      }),
      pod(e, 'share-a', 'share'),
      pod(e, 'share-b', 'share'),
    );
    await running(e, 'share-a');
    await running(e, 'share-b');
    const uuids = ['share-a', 'share-b'].map((p) => {
      const [dev] = allocatedDevices(e, podClaim(e, p, 'dev'));
      assert.equal(dev?.name, 'gpu-0', p);
      return dev.attrs['uuid']?.string ?? '';
    });
    for (const p of ['share-a', 'share-b'])
      assert.match(
        mustKubectl(e, ['exec', p, '--', 'nvidia-smi', '-L']),
        new RegExp(`UUID: ${uuids[0] ?? ''}`),
      );
    // Prepared as a GPU, its VFIO sibling leaves the slice (NVIDIA's RemoveSiblingDevices).
    assert.equal(
      devices(e).some((x) => x.name === 'gpu-vfio-0'),
      false,
    );
    apply(e, pod(e, 'share-c', 'share'), pod(e, 'mps', 'mps'));
    await eventually('share-c unschedulable', () =>
      scheduled(e, 'share-c') === 'Unschedulable' ? true : undefined,
    );
    await prepareEvent(e, 'mps', 'MPS sharing is not supported when consumable shares is enabled');
    gone(e, 'share-c', 'mps', 'share-a');
    assert.equal(
      devices(e).some((x) => x.name === 'gpu-vfio-0'),
      false,
      'share-b still holds gpu-0',
    );
    gone(e, 'share-b');
    await eventually('gpu-vfio-0 back after the last share', () =>
      devices(e).some((x) => x.name === 'gpu-vfio-0') ? true : undefined,
    );
  });

  it("a VFIO claim's pod sees fake VFIO nodes and its metadata; the GPU is not a GPU meanwhile", async () => {
    apply(
      e,
      claimTemplate('vfio', [deviceRequest('vfio', 'vfio.gpu.nvidia.com', 1, [onBus(busOf(e, 'gpu-1'))])], {
        config: [
          {
            opaque: {
              driver: GPU,
              parameters: {
                apiVersion: 'resource.nvidia.com/v1beta1',
                kind: 'VfioDeviceConfig',
                iommu: { enableAPIDevice: true },
              },
            },
          },
        ],
      }),
      pod(
        e,
        'vfio',
        'vfio',
        'echo "visible=$NVIDIA_VISIBLE_DEVICES"; ls /dev/vfio; cat /var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/dev/vfio/gpu.nvidia.com-metadata.json; sleep 3600',
      ),
    );
    await running(e, 'vfio');
    const out = await eventually('the VFIO pod output', () => {
      const r = kubectl(e, ['logs', 'vfio']);
      return r.out.includes('DeviceMetadata') ? r.out : undefined;
    });
    assert.match(out, /^visible=void$/m);
    assert.match(out, /^17$/m, '/dev/vfio/<group> of gpu-vfio-1');
    assert.match(out, /^vfio$/m, 'the API device');
    assert.match(out, /"vfio"/);
    assert.equal(
      devices(e).some((x) => x.name === 'gpu-1'),
      false,
      'gpu-1 is out of the slice while VFIO',
    );
    gone(e, 'vfio');
    await eventually('gpu-1 back', () => (devices(e).some((x) => x.name === 'gpu-1') ? true : undefined));
  });

  it("a NIC claim's status carries DRANET's networkData", async () => {
    apply(
      e,
      claimTemplate('nic', [deviceRequest('nic', e.FAKEGPU_NIC_CLASS, 1)], {
        config: [
          {
            opaque: {
              driver: 'dra.net',
              parameters: { interface: { name: 'net1', addresses: ['10.0.0.5/24'] } },
            },
          },
        ],
      }),
      pod(e, 'nic', 'nic', 'sleep 3600'),
    );
    await running(e, 'nic');
    const claim = podClaim(e, 'nic', 'dev');
    const data = await eventually('status.devices of the NIC claim', () => {
      const out = kubectl(e, [
        'get',
        'resourceclaim',
        claim,
        '-o',
        'jsonpath={.status.devices[0].networkData}',
      ]).out;
      return out
        ? (JSON.parse(out) as { interfaceName?: string; ips?: string[]; hardwareAddress?: string })
        : undefined;
    });
    assert.equal(data.interfaceName, 'net1');
    assert.deepEqual(data.ips, ['10.0.0.5/24']);
    assert.match(data.hardwareAddress ?? '', /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    gone(e, 'nic');
  });
});
