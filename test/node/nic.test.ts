import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import type { CdiSpec } from '../../src/node/cdi/spec.js';
import { CheckpointStore } from '../../src/node/checkpoint/checkpoint.js';
import { buildMachine } from '../../src/model/hardware/build.js';
import { NicState } from '../../src/node/nic/prepare.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import { PRESETS } from '../../src/model/preset/index.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { topology } from '../../src/model/topology/topology.js';
import { devicesOf, render } from '../support/render.js';

const NODE = 'node-a';
const machine = (p: string) => buildMachine(resolveProfile(p), { nodeName: NODE, dynamicMig: false });

function setup(profile: string) {
  const root = mkdtempSync(join(tmpdir(), 'fakegpu-nic-'));
  const opts = {
    driverName: 'dra.net',
    nodeName: NODE,
    cdiRoot: join(root, 'cdi'),
    stateDir: join(root, 'state'),
  };
  const make = () =>
    new NicState(machine(profile).nics, new CheckpointStore(join(root, 'state', 'checkpoint.json')), opts);
  return { opts, make, state: make() };
}

function claim(uid: string, devices: string[]): ResourceClaim {
  return {
    metadata: { name: `claim-${uid}`, namespace: 'default', uid },
    status: {
      allocation: {
        devices: {
          results: devices.map((device) => ({ request: 'nic', driver: 'dra.net', pool: NODE, device })),
        },
      },
    },
  };
}

const specOf = (cdiRoot: string, uid: string): CdiSpec =>
  parse(readFileSync(join(cdiRoot, `k8s.dra.net-claim_${uid}.yaml`), 'utf8')) as CdiSpec;

describe('NIC slices', () => {
  it('publish every non-primary NIC of every preset, named by PCI address, within the attribute limit', () => {
    for (const p of PRESETS) {
      const m = machine(p.name);
      const nics = render(p.name, { nics: true }).items.filter((s) => s.spec.driver === 'dra.net');
      const devices = nics.flatMap((s) => s.spec.devices ?? []);
      assert.equal(devices.length, m.nics.filter((n) => !n.primary).length, p.name);
      for (const d of devices) {
        assert.match(d.name, /^pci-[0-9a-f]{4}-[0-9a-f]{2}-[0-9a-f]{2}-[0-7]$/);
        assert.ok(Object.keys(d.attributes ?? {}).length <= 32);
      }
    }
  });

  it('carry the standard NUMA key only when asked, and never for NUMA -1', () => {
    const std = devicesOf(render('azure-nd-gb300-v6', { nics: true, nicNumaAttribute: 'standard' })).filter(
      (d) => d.name.startsWith('pci-'),
    );
    assert.deepEqual(
      std.map((d) => d.attributes?.['resource.kubernetes.io/numaNode']),
      [{ int: 0 }, { int: 0 }, { int: 1 }, { int: 1 }, undefined],
    );
    const plain = devicesOf(render('azure-nd-gb300-v6', { nics: true })).filter((d) =>
      d.name.startsWith('pci-'),
    );
    assert.ok(plain.every((d) => d.attributes?.['resource.kubernetes.io/numaNode'] === undefined));
  });
});

describe('preparing NIC claims', () => {
  it('writes a CDI spec with the RDMA device nodes and the env NCCL reads, idempotently', async () => {
    const { opts, state } = setup('dgx-h100');
    const devices = await state.prepare(claim('u1', ['pci-0000-18-00-0', 'pci-0000-40-00-0']));
    assert.deepEqual(
      devices.map((d) => d.cdiDeviceIds),
      [['k8s.dra.net/claim=u1-pci-0000-18-00-0'], ['k8s.dra.net/claim=u1-pci-0000-40-00-0']],
    );
    const spec = specOf(opts.cdiRoot, 'u1');
    assert.equal(spec.kind, 'k8s.dra.net/claim');
    assert.deepEqual(
      spec.containerEdits?.deviceNodes?.map((n) => n.path),
      ['/dev/infiniband/rdma_cm'],
    );
    assert.deepEqual(
      spec.devices.map((d) => d.containerEdits.deviceNodes?.map((n) => [n.path, n.major, n.minor])),
      [[['/dev/infiniband/uverbs0', 120, 192]], [['/dev/infiniband/uverbs1', 120, 193]]],
    );
    assert.deepEqual(spec.devices[0]?.containerEdits.env, [
      'DRANET_DEVICES=0000:18:00.0,0000:40:00.0',
      'NCCL_IB_HCA==mlx5_0,mlx5_3',
      'NCCL_SOCKET_IFNAME=ibp24s0,ibp64s0',
    ]);
    assert.deepEqual(await state.prepare(claim('u1', ['pci-0000-18-00-0', 'pci-0000-40-00-0'])), devices);
  });

  it('refuses a NIC another claim holds, and one the node does not have', async () => {
    const { state } = setup('aws-p4d.24xlarge');
    await state.prepare(claim('u1', ['pci-0000-10-1b-0']));
    await assert.rejects(
      state.prepare(claim('u2', ['pci-0000-10-1b-0'])),
      /error preparing devices for claim default\/claim-u2:u2: device pci-0000-10-1b-0 is already prepared for claim u1/,
    );
    // The primary ENA is not published, so it cannot be prepared either.
    await assert.rejects(
      state.prepare(claim('u3', ['pci-0000-10-01-0'])),
      /device pci-0000-10-01-0 not found on this node/,
    );
  });

  it('gives EFA claims the libfabric provider, and survives a restart', async () => {
    const { opts, make, state } = setup('aws-p4d.24xlarge');
    await state.prepare(claim('u1', ['pci-0000-90-1b-0']));
    assert.ok(specOf(opts.cdiRoot, 'u1').devices[0]?.containerEdits.env?.includes('FI_PROVIDER=efa'));
    const again = make();
    assert.deepEqual(again.restore().stale, []);
    await again.unprepare('u1');
    assert.equal(existsSync(join(opts.cdiRoot, 'k8s.dra.net-claim_u1.yaml')), false);
    await again.prepare(claim('u2', ['pci-0000-90-1b-0']));
  });
});

describe('topology', () => {
  it('finds the p4d roots shared by two GPUs and one EFA, and none on GB200', () => {
    assert.deepEqual(topology(machine('aws-p4d.24xlarge')).alignment.sharedRoots, [
      { root: 'pci0000:10', gpus: 2, rdmaNics: 1 },
      { root: 'pci0000:20', gpus: 2, rdmaNics: 1 },
      { root: 'pci0000:90', gpus: 2, rdmaNics: 1 },
      { root: 'pci0000:a0', gpus: 2, rdmaNics: 1 },
    ]);
    const gb = topology(machine('oci-bm.gpu.gb200.4')).alignment;
    assert.deepEqual(gb.sharedRoots, []);
    assert.deepEqual(gb.sharedNuma, [
      { numaNode: 0, gpus: 2, rdmaNics: 4 },
      { numaNode: 1, gpus: 2, rdmaNics: 4 },
    ]);
  });
});
