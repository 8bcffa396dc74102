import type { NicHardware } from '../hardware/machine.js';
import type { Device, DeviceAttribute } from '../../kube/types/resource.js';
import { STD, type Attributes } from '../device/attributes.js';

/**
 * The one place that decides what a NIC says about itself, as DRANET (`dra.net`) publishes it: netlink
 * facts only where the function has a netdev, RDMA facts where it has an RDMA device, topology where
 * sysfs has it. Keys are written out with their domain, as DRANET writes them.
 */

export const DRANET = 'dra.net';

export interface NicAttributeOptions {
  /**
   * Also publish the standard `resource.kubernetes.io/numaNode` (KEP-6072) beside `dra.net/numaNode`, so
   * a claim can `matchAttribute` NUMA across a GPU and a NIC. DRANET releases so far publish only its own key.
   */
  standardNumaNode: boolean;
}

const str = (s: string): DeviceAttribute => ({ string: s });

/** `0000:10:1b.0` → `pci-0000-10-1b-0`: DRANET names PCI functions by address. */
export function nicDeviceName(nic: NicHardware): string {
  return `pci-${nic.busId.replace(/[:.]/g, '-')}`;
}

export function nicAttributes(nic: NicHardware, opts: NicAttributeOptions): Attributes {
  const m = nic.model;
  const a: Attributes = {
    [`${DRANET}/pciAddress`]: str(nic.busId),
    [`${DRANET}/pciVendor`]: str(m.vendorName),
    [`${DRANET}/pciDevice`]: str(m.deviceName),
    [`${DRANET}/pciSubsystem`]: str(m.subsystem),
    [`${DRANET}/rdma`]: { bool: m.rdma },
  };
  // DRANET names the RDMA device only where no netdev names the function.
  if (nic.rdmaDevice !== null && nic.ifName === null) a[`${DRANET}/rdmaDevice`] = str(nic.rdmaDevice);
  // sysfs reports -1 where the platform has no NUMA affinity; DRANET then leaves the key out.
  if (nic.numaNode >= 0) {
    a[`${DRANET}/numaNode`] = { int: nic.numaNode };
    if (opts.standardNumaNode) a[STD.numaNode] = { int: nic.numaNode };
  }
  if (nic.pcieRoot !== null) a[STD.pcieRoot] = str(nic.pcieRoot);
  if (nic.ifName !== null) {
    a[`${DRANET}/ifName`] = str(nic.ifName);
    a[`${DRANET}/alias`] = str('');
    a[`${DRANET}/ebpf`] = { bool: false };
    a[`${DRANET}/encapsulation`] = str(m.encapsulation ?? 'ether');
    if (nic.mac !== null) a[`${DRANET}/mac`] = str(nic.mac);
    if (nic.mtu !== null) a[`${DRANET}/mtu`] = { int: nic.mtu };
    if (nic.ipv4 !== null) a[`${DRANET}/ipv4`] = str(nic.ipv4);
    a[`${DRANET}/sriov`] = { bool: m.sriov };
    if (m.sriov) a[`${DRANET}/sriovVfs`] = { int: 0 };
    if (m.virtualFunction) a[`${DRANET}/isSriovVf`] = { bool: true };
    a[`${DRANET}/state`] = str('up');
    a[`${DRANET}/type`] = str(m.encapsulation === 'infiniband' ? 'ipoib' : 'device');
    a[`${DRANET}/virtual`] = { bool: false };
  }
  // Go serialises attribute maps in key order; so do we, so the objects compare byte for byte.
  return Object.fromEntries(Object.entries(a).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
}

/** The NICs DRANET publishes, in its order (PCI address): all but the one carrying the default route. */
export function nicDevices(nics: readonly NicHardware[], opts: NicAttributeOptions): Device[] {
  return nics
    .filter((n) => !n.primary)
    .sort((x, y) => (x.busId < y.busId ? -1 : x.busId > y.busId ? 1 : 0))
    .map((n) => ({ name: nicDeviceName(n), attributes: nicAttributes(n, opts) }));
}
