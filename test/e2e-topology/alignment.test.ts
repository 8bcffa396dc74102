import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { clusterRestart, type Exports } from '../../src/local-cluster/cluster.js';
import { eventually, kubectl, mustKubectl } from '../support/cluster.js';
import {
  allocatedDevices,
  apply,
  type Attr,
  claimTemplate,
  cleanup,
  deviceRequest,
  failedScheduling,
  podClaim,
  podManifest,
  running,
  TOPO_CLUSTER_DIR,
  TOPO_NODE,
  topoCluster,
} from '../support/e2e.js';

/**
 * GPU–NIC alignment through the real scheduler: fakegpu's GPUs and DRANET-shaped NICs on one node, claims
 * that constrain them to one PCIe root or one NUMA node. On a p4d two GPUs and one EFA share each root; on
 * a GB200 no root holds both, and alignment has to go by NUMA.
 */

interface Slices {
  items: { spec: { driver: string; devices?: { name: string; attributes?: Record<string, Attr> }[] } }[];
}

const rdmaNic = (e: Exports, count: number, extra: string[] = []) =>
  deviceRequest('nic', e.FAKEGPU_NIC_CLASS, count, ['device.attributes["dra.net"].rdma == true', ...extra]);
const gpus = (count: number, extra: string[] = []) => deviceRequest('gpu', 'gpu.nvidia.com', count, extra);
const template = claimTemplate;

/** The container shows what a workload would use to find its NICs. */
const pod = (e: Exports, name: string, tmpl: string): unknown =>
  podManifest(e, {
    name,
    claims: [{ name: 'devs', template: tmpl }],
    containers: [
      {
        name: 'main',
        claims: [{ name: 'devs' }],
        command:
          'echo "dranet=$DRANET_DEVICES fi=$FI_PROVIDER hca=$NCCL_IB_HCA"; echo "ib=$(ls /dev/infiniband | tr "\\n" " ")"; sleep 3600',
      },
    ],
  });

/** Each allocated device of a pod's claim, with the attributes its slice publishes. */
const allocated = (e: Exports, podName: string) => allocatedDevices(e, podClaim(e, podName, 'devs'));

async function logOf(e: Exports, podName: string): Promise<string> {
  return eventually(`output of ${podName}`, () => {
    const r = kubectl(e, ['logs', podName]);
    return r.code === 0 && r.out.includes('ib=') ? r.out : undefined;
  });
}

function setProfile(e: Exports, profile: string | null): Promise<void> {
  mustKubectl(e, [
    'label',
    'node',
    TOPO_NODE,
    profile ? `fakegpu.dev/profile=${profile}` : 'fakegpu.dev/profile-',
    '--overwrite',
  ]);
  return clusterRestart(TOPO_CLUSTER_DIR, 'fakegpu-plugin', (l) => {
    process.stderr.write(`fakegpu: ${l}\n`);
  });
}

/** Waits until the node publishes only this GPU product and only this NIC device, so nothing stale is allocated. */
async function machineIs(e: Exports, product: string, nicDevice: string): Promise<void> {
  await eventually(`${product} and ${nicDevice} slices`, () => {
    const s = JSON.parse(
      mustKubectl(e, ['get', 'resourceslices', `--field-selector=spec.nodeName=${TOPO_NODE}`, '-o', 'json']),
    ) as Slices;
    // GPUs and NICs: a GB200 also publishes NVIDIA's compute-domain channel and daemon.
    const seen = new Set(
      s.items
        .filter((x) => x.spec.driver !== 'compute-domain.nvidia.com')
        .flatMap((x) =>
          (x.spec.devices ?? []).map(
            (d) => d.attributes?.['productName']?.string ?? d.attributes?.['dra.net/pciDevice']?.string,
          ),
        ),
    );
    return seen.size === 2 && seen.has(product) && seen.has(nicDevice) ? true : undefined;
  });
}

describe('GPU–NIC alignment on a fake AWS p4d.24xlarge', () => {
  let e: Exports;
  before(async () => {
    e = await topoCluster();
  });
  after(() => {
    cleanup(e);
  });

  it('gives each pod 2 GPUs and 1 EFA on one PCIe root; four pods fill the node, a fifth waits', async () => {
    apply(e, template('root-aligned', [gpus(2), rdmaNic(e, 1)], 'resource.kubernetes.io/pcieRoot'));
    const names = ['aligned-0', 'aligned-1', 'aligned-2', 'aligned-3'];
    apply(e, ...names.map((n) => pod(e, n, 'root-aligned')));
    for (const n of names) await running(e, n);
    const roots = names.map((n) => {
      const devs = allocated(e, n);
      assert.deepEqual(
        devs.map((d) => d.driver).sort(),
        ['dra.net', 'gpu.nvidia.com', 'gpu.nvidia.com'],
        `${n}: two GPUs and one NIC`,
      );
      const r = new Set(devs.map((d) => d.attrs['resource.kubernetes.io/pcieRoot']?.string));
      assert.equal(r.size, 1, `${n}: all three on one root, got ${[...r].join(' ')}`);
      const nic = devs.find((d) => d.driver === 'dra.net');
      assert.equal(nic?.attrs['dra.net/pciDevice']?.string, 'Elastic Fabric Adapter (EFA)');
      return [...r][0];
    });
    assert.deepEqual(roots.slice().sort(), ['pci0000:10', 'pci0000:20', 'pci0000:90', 'pci0000:a0']);

    // The workload finds its EFA: libfabric's provider, the device's address, and an RDMA device node.
    const out = await logOf(e, 'aligned-0');
    const nic = allocated(e, 'aligned-0').find((d) => d.driver === 'dra.net');
    assert.match(out, new RegExp(`dranet=${nic?.attrs['dra.net/pciAddress']?.string ?? 'missing'} fi=efa`));
    assert.match(out, /ib=rdma_cm uverbs[0-3] /);

    apply(e, pod(e, 'aligned-4', 'root-aligned'));
    assert.match(await failedScheduling(e, 'aligned-4'), /cannot allocate all claims/);
    assert.equal(kubectl(e, ['get', 'pod', 'aligned-4', '-o', 'jsonpath={.status.phase}']).out, 'Pending');
  });
});

describe('GPU–NIC alignment on a fake OCI BM.GPU.GB200.4', () => {
  let e: Exports;
  before(async () => {
    e = await topoCluster();
    cleanup(e);
    await setProfile(e, 'oci-bm.gpu.gb200.4');
    await machineIs(e, 'NVIDIA GB200', 'CX8 Family [ConnectX-8]');
  });
  after(async () => {
    cleanup(e);
    await setProfile(e, null);
  });

  it('cannot align on a PCIe root: GPUs and NICs never share one on Grace', async () => {
    apply(e, template('gb-root', [gpus(2), rdmaNic(e, 1)], 'resource.kubernetes.io/pcieRoot'));
    apply(e, pod(e, 'gb-root', 'gb-root'));
    assert.match(await failedScheduling(e, 'gb-root'), /cannot allocate all claims/);
    mustKubectl(e, ['delete', 'pod', 'gb-root', '--wait=true']);
  });

  it("aligns on NUMA: by matchAttribute on the standard key, and by CEL on each driver's own key", async () => {
    apply(e, template('gb-numa', [gpus(2), rdmaNic(e, 1)], 'resource.kubernetes.io/numaNode'));
    apply(e, pod(e, 'gb-numa', 'gb-numa'));
    await running(e, 'gb-numa');
    const devs = allocated(e, 'gb-numa');
    const numa = new Set(devs.map((d) => d.attrs['resource.kubernetes.io/numaNode']?.int));
    assert.equal(numa.size, 1, `one NUMA node, got ${[...numa].join(' ')}`);
    const taken = [...numa][0];
    const nic = devs.find((d) => d.driver === 'dra.net');
    assert.equal(nic?.attrs['dra.net/numaNode']?.int, taken);
    assert.match(await logOf(e, 'gb-numa'), /hca==mlx5_\d/);

    // The way DRANET's own GB200 example aligns: pin both requests to the other NUMA node with CEL.
    const other = taken === 0 ? 1 : 0;
    apply(
      e,
      template('gb-numa-cel', [
        gpus(2, [`device.attributes["resource.kubernetes.io"].numaNode == ${other}`]),
        rdmaNic(e, 1, [`device.attributes["dra.net"].numaNode == ${other}`]),
      ]),
    );
    apply(e, pod(e, 'gb-numa-cel', 'gb-numa-cel'));
    await running(e, 'gb-numa-cel');
    const cel = allocated(e, 'gb-numa-cel');
    assert.deepEqual(
      cel.map((d) => d.attrs['dra.net/numaNode']?.int ?? d.attrs['resource.kubernetes.io/numaNode']?.int),
      [other, other, other],
    );
  });
});
