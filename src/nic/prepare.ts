import { join } from 'node:path';
import type { CdiSpec, ContainerEdits } from '../cdi/spec.js';
import { cdiDeviceId, cdiDeviceName } from '../cdi/spec.js';
import { removeSpec, writeSpec } from '../cdi/write.js';
import type { CheckpointStore, PreparedClaim, PreparedDevice } from '../checkpoint/checkpoint.js';
import type { NicHardware } from '../hardware/machine.js';
import { baseRequest, type ResourceClaim } from '../prepare/claim.js';
import { fakeDeviceNode, makeFakeNodes, PrepareError, Serial } from '../prepare/node.js';
import { nicDeviceName } from './attributes.js';

/**
 * The node's side of a NIC claim. DRANET moves the netdev into the pod and adds the RDMA character
 * devices through NRI; with no real NIC to move, we give the container what a workload looks for: the
 * RDMA device nodes (fake, on our own major) and the variables NCCL and libfabric read to pick them.
 */

export const NIC_CDI_KIND = 'k8s.dra.net/claim';

/** Real uverbs minors start at 192 (major 231); ours keep that numbering on the fake major. */
const UVERBS_MINOR_BASE = 192;
const RDMA_CM = { path: '/dev/infiniband/rdma_cm', minor: 191 } as const;

export interface NicPrepareOptions {
  driverName: string;
  nodeName: string;
  cdiRoot: string;
  stateDir: string;
}

interface NicAllocatable {
  nic: NicHardware;
  /** `uverbs<N>`: the kernel numbers RDMA devices in probe order, which follows the bus. */
  uverbs: number | null;
}

export class NicState {
  private readonly allocatable = new Map<string, NicAllocatable>();
  private readonly serial = new Serial();

  constructor(
    nics: readonly NicHardware[],
    private readonly checkpoint: CheckpointStore,
    private readonly opts: NicPrepareOptions,
  ) {
    const rdma = nics
      .filter((n) => n.model.rdma)
      .map((n) => n.busId)
      .sort();
    for (const nic of nics) {
      if (nic.primary) continue;
      const i = rdma.indexOf(nic.busId);
      this.allocatable.set(nicDeviceName(nic), { nic, uverbs: i < 0 ? null : i });
    }
    this.makeDeviceNodes();
  }

  private makeDeviceNodes(): void {
    const nodes: [string, number][] = [['rdma_cm', RDMA_CM.minor]];
    for (const a of this.allocatable.values())
      if (a.uverbs !== null) nodes.push([`uverbs${a.uverbs}`, UVERBS_MINOR_BASE + a.uverbs]);
    makeFakeNodes(join(this.opts.stateDir, 'dev', 'infiniband'), nodes);
  }

  /** Re-writes the CDI specs of completed claims (they may live on tmpfs); drops half-done ones. */
  restore(): string[] {
    const stale: string[] = [];
    for (const [uid, c] of this.checkpoint.all()) {
      if (c.state !== 'PrepareCompleted') this.forget(uid);
      else if (c.devices.every((d) => this.allocatable.has(d.deviceName))) this.writeSpec(uid, c);
      else stale.push(uid);
    }
    return stale;
  }

  prepare(claim: ResourceClaim): Promise<PreparedDevice[]> {
    return this.serial.run(() => this.prepareNow(claim));
  }

  unprepare(uid: string): Promise<void> {
    return this.serial.run(() => {
      this.forget(uid);
    });
  }

  private fail(claim: ResourceClaim, cause: string): PrepareError {
    const m = claim.metadata;
    return new PrepareError(`error preparing devices for claim ${m.namespace}/${m.name}:${m.uid}: ${cause}`);
  }

  private prepareNow(claim: ResourceClaim): PreparedDevice[] {
    const uid = claim.metadata.uid;
    const done = this.checkpoint.get(uid);
    if (done?.state === 'PrepareCompleted') {
      this.writeSpec(uid, done);
      return done.devices;
    }
    const allocation = claim.status?.allocation?.devices;
    if (!allocation) throw this.fail(claim, 'claim not yet allocated');
    const devices: PreparedDevice[] = [];
    for (const r of (allocation.results ?? []).filter((x) => x.driver === this.opts.driverName)) {
      const a = this.allocatable.get(r.device);
      if (r.pool !== this.opts.nodeName || !a)
        throw this.fail(claim, `device ${r.device} not found on this node`);
      const other = r.adminAccess ? undefined : this.checkpoint.holder(r.device, uid);
      if (other !== undefined)
        throw this.fail(claim, `device ${r.device} is already prepared for claim ${other}`);
      devices.push({
        requestNames: [baseRequest(r.request)],
        poolName: r.pool,
        deviceName: r.device,
        cdiDeviceIds: [cdiDeviceId(uid, r.device, NIC_CDI_KIND)],
        uuid: a.nic.busId,
        type: 'nic',
      });
    }
    const record: PreparedClaim = {
      namespace: claim.metadata.namespace,
      name: claim.metadata.name,
      state: 'PrepareCompleted',
      devices,
      configState: {},
    };
    this.writeSpec(uid, record);
    this.checkpoint.put(uid, record);
    return devices;
  }

  /** What a workload reads to find its NICs, for the whole claim (CDI env entries do not merge). */
  private env(c: PreparedClaim): string[] {
    const nics = c.devices.flatMap((d) => {
      const a = this.allocatable.get(d.deviceName);
      return a ? [a.nic] : [];
    });
    const env: string[] = [`DRANET_DEVICES=${nics.map((n) => n.busId).join(',')}`];
    const mlx = nics.filter((n) => n.model.vendorId === '15b3' && n.rdmaDevice !== null);
    if (mlx.length > 0) env.push(`NCCL_IB_HCA==${mlx.map((n) => n.rdmaDevice).join(',')}`);
    if (nics.some((n) => n.model.key.startsWith('EFA')))
      env.push('FI_PROVIDER=efa', 'FI_EFA_USE_DEVICE_RDMA=1');
    const netdevs = nics.flatMap((n) => (n.ifName === null ? [] : [n.ifName]));
    if (netdevs.length > 0) env.push(`NCCL_SOCKET_IFNAME=${netdevs.join(',')}`);
    return env;
  }

  private writeSpec(uid: string, c: PreparedClaim): void {
    if (c.devices.length === 0) {
      removeSpec(this.opts.cdiRoot, uid, NIC_CDI_KIND);
      return;
    }
    const env = this.env(c);
    const devices = c.devices.map((d) => {
      const a = this.allocatable.get(d.deviceName);
      if (!a) throw new PrepareError(`device ${d.deviceName} not found on this node`);
      const edits: ContainerEdits = { env };
      if (a.uverbs !== null)
        edits.deviceNodes = [
          fakeDeviceNode(`/dev/infiniband/uverbs${a.uverbs}`, UVERBS_MINOR_BASE + a.uverbs),
        ];
      return { name: cdiDeviceName(uid, d.deviceName), containerEdits: edits };
    });
    const rdma = c.devices.some((d) => this.allocatable.get(d.deviceName)?.uverbs != null);
    const spec: CdiSpec = {
      cdiVersion: '0.5.0',
      kind: NIC_CDI_KIND,
      ...(rdma ? { containerEdits: { deviceNodes: [fakeDeviceNode(RDMA_CM.path, RDMA_CM.minor)] } } : {}),
      devices,
    };
    writeSpec(this.opts.cdiRoot, uid, spec);
  }

  private forget(uid: string): void {
    removeSpec(this.opts.cdiRoot, uid, NIC_CDI_KIND);
    this.checkpoint.delete(uid);
  }
}
