import { join } from 'node:path';
import type { CdiSpec, ContainerEdits } from '../cdi/spec.js';
import { cdiDeviceId, cdiDeviceName, cdiKindFor } from '../cdi/spec.js';
import type { CheckpointStore, PreparedClaim, PreparedDevice } from '../checkpoint/checkpoint.js';
import type { NicHardware } from '../../model/hardware/machine.js';
import { baseRequest, type ResourceClaim } from '../../kube/types/claim.js';
import { ClaimLifecycle, plannedClaim, type ClaimHooks } from '../prepare/lifecycle.js';
import { ClaimError, fakeDeviceNode, makeFakeNodes } from '../prepare/node.js';
import { nicDeviceName } from '../../model/nic/attributes.js';

/**
 * The node's side of a NIC claim. DRANET moves the netdev into the pod and adds the RDMA character
 * devices through NRI; with no real NIC to move, we give the container what a workload looks for: the
 * RDMA device nodes (fake, on our own major) and the variables NCCL and libfabric read to pick them.
 */

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

class NicHooks implements ClaimHooks {
  /** `k8s.dra.net/claim` for DRANET's own name, and another kind for another `--nic-driver-name`. */
  readonly cdiKind: string;
  readonly errorPrefix = '';
  readonly allocatable = new Map<string, NicAllocatable>();

  constructor(
    nics: readonly NicHardware[],
    private readonly opts: NicPrepareOptions,
  ) {
    this.cdiKind = cdiKindFor(opts.driverName);
    const rdma = nics
      .filter((n) => n.model.rdma)
      .map((n) => n.busId)
      .sort();
    for (const nic of nics) {
      if (nic.primary) continue;
      const i = rdma.indexOf(nic.busId);
      this.allocatable.set(nicDeviceName(nic), { nic, uverbs: i < 0 ? null : i });
    }
  }

  has(d: PreparedDevice): boolean {
    return this.allocatable.has(d.deviceName);
  }

  plan(claim: ResourceClaim, heldBy: (device: string) => string | undefined): PreparedClaim {
    const uid = claim.metadata.uid;
    const allocation = claim.status?.allocation?.devices;
    if (!allocation) throw new ClaimError('claim not yet allocated');
    const devices: PreparedDevice[] = [];
    for (const r of (allocation.results ?? []).filter((x) => x.driver === this.opts.driverName)) {
      const a = this.allocatable.get(r.device);
      if (r.pool !== this.opts.nodeName || !a)
        throw new ClaimError(`device ${r.device} not found on this node`);
      const other = r.adminAccess ? undefined : heldBy(r.device);
      if (other !== undefined)
        throw new ClaimError(`device ${r.device} is already prepared for claim ${other}`);
      devices.push({
        requestNames: [baseRequest(r.request)],
        poolName: r.pool,
        deviceName: r.device,
        cdiDeviceIds: [cdiDeviceId(uid, r.device, this.cdiKind)],
        uuid: a.nic.busId,
        type: 'nic',
      });
    }
    return plannedClaim(claim, devices);
  }

  /** Nothing to make: a NIC claim is its CDI spec. */
  apply(devices: PreparedDevice[]): PreparedDevice[] {
    return devices;
  }

  undo(): void {
    // Nothing was made on the node.
  }

  sweepInstances(): number {
    return 0;
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

  files(uid: string, c: PreparedClaim): CdiSpec | null {
    if (c.devices.length === 0) return null;
    const env = this.env(c);
    const devices = c.devices.map((d) => {
      const a = this.allocatable.get(d.deviceName);
      if (!a) throw new Error(`device ${d.deviceName} not found on this node`);
      const edits: ContainerEdits = { env };
      if (a.uverbs !== null)
        edits.deviceNodes = [
          fakeDeviceNode(`/dev/infiniband/uverbs${a.uverbs}`, UVERBS_MINOR_BASE + a.uverbs),
        ];
      return { name: cdiDeviceName(uid, d.deviceName), containerEdits: edits };
    });
    const rdma = c.devices.some((d) => this.allocatable.get(d.deviceName)?.uverbs != null);
    return {
      cdiVersion: '0.5.0',
      kind: this.cdiKind,
      ...(rdma ? { containerEdits: { deviceNodes: [fakeDeviceNode(RDMA_CM.path, RDMA_CM.minor)] } } : {}),
      devices,
    };
  }
}

export class NicState extends ClaimLifecycle {
  constructor(nics: readonly NicHardware[], checkpoint: CheckpointStore, opts: NicPrepareOptions) {
    const hooks = new NicHooks(nics, opts);
    super(checkpoint, hooks, opts);
    const nodes: [string, number][] = [['rdma_cm', RDMA_CM.minor]];
    for (const a of hooks.allocatable.values())
      if (a.uverbs !== null) nodes.push([`uverbs${a.uverbs}`, UVERBS_MINOR_BASE + a.uverbs]);
    makeFakeNodes(join(opts.stateDir, 'dev', 'infiniband'), nodes);
  }
}
