import { findModel } from '../../model/catalog/index.js';
import { NIC_MODELS } from '../../model/catalog/nics.js';
import { parseMigDeviceName } from '../../model/device/names.js';
import { FakegpuError, show } from '../../errors.js';
import { intOf, stringOf, versionOf, type Device, type ResourceSlice } from '../../kube/types/resource.js';
import { STD } from '../../model/device/attributes.js';
import { DRANET } from '../../model/nic/attributes.js';
import type { GpuEntry, NicEntry, ProfileSpec } from '../../model/preset/machine-spec.js';
import { DRIVER_NAME } from '../../model/slice/build.js';

/**
 * A node's machine read back from the slices NVIDIA's driver and DRANET published for it: what each
 * device's attributes say about the board under it (model, bus ID, root, NUMA node, minor, UUID, MIG
 * instances by name) and the driver. It is the inverse of the device model for what the slices show;
 * `compare.ts` then proves it by rendering the result and diffing it with the capture.
 */

export interface SliceMachine {
  spec: ProfileSpec;
  /** The driver ran with DynamicMIG: counter sets in its slices. */
  dynamicMig: boolean;
}

interface Board {
  entry: GpuEntry;
  layout: string[];
}

function boardOf(d: Device, where: string): { minor: number; entry: GpuEntry } {
  const a = d.attributes ?? {};
  const product = stringOf(a.productName);
  const bus = stringOf(a[STD.pciBusID]);
  if (product === undefined || bus === undefined)
    throw new FakegpuError(
      where,
      "has no productName or resource.kubernetes.io/pciBusID attribute; not NVIDIA's driver?",
    );
  const minor = Number(/^gpu-(\d+)/.exec(d.name)?.[1]);
  if (!Number.isInteger(minor))
    throw new FakegpuError(where, `device name ${show(d.name)} is not gpu-<minor>…`);
  const entry: GpuEntry = { model: findModel(product, `${where} productName`).key, busId: bus, minor };
  const root = stringOf(a[STD.pcieRoot]);
  entry.pcieRoot = root ?? null;
  // Absent: a driver before 0.5, or sysfs' -1; either way the slices do not know one.
  entry.numaNode = intOf(a[STD.numaNode]) ?? -1;
  return { minor, entry };
}

function gpusOf(
  slices: readonly ResourceSlice[],
  node: string,
): { gpus: GpuEntry[]; driver: ProfileSpec['driver']; mode: string | null } {
  const boards = new Map<number, Board>();
  let driver: ProfileSpec['driver'];
  let mode: string | null = null;
  for (const slice of slices) {
    for (const d of slice.spec.devices ?? []) {
      const where = `node ${node} device ${d.name}`;
      const a = d.attributes ?? {};
      const { minor, entry } = boardOf(d, where);
      const board = boards.get(minor) ?? { entry, layout: [] };
      boards.set(minor, board);
      const dv = versionOf(a.driverVersion);
      const cuda = versionOf(a.cudaDriverVersion);
      if (dv !== undefined)
        driver = { version: dv, ...(cuda ? { cudaVersion: cuda.replace(/\.0$/, '') } : {}) };
      mode = stringOf(a.addressingMode) ?? mode;
      const type = stringOf(a.type);
      if (type === 'gpu') {
        const uuid = stringOf(a.uuid);
        if (uuid !== undefined) board.entry.uuid = uuid;
      } else if (type === 'mig') {
        const parent = stringOf(a.parentUUID);
        if (parent !== undefined) board.entry.uuid = parent;
        // Static MIG: a device with its own UUID is an instance that exists; dynamic partitions have none.
        const placed = parseMigDeviceName(d.name);
        if (stringOf(a.uuid) !== undefined && placed !== null && stringOf(a.profile) !== undefined)
          board.layout.push(`${stringOf(a.profile) ?? ''}@${placed.start}`);
      }
    }
  }
  const gpus = [...boards.values()].map((b) => {
    if (b.layout.length > 0) b.entry.mig = { mode: 'enabled', layout: b.layout };
    return b.entry;
  });
  return { gpus: gpus.sort((x, y) => (x.busId ?? '').localeCompare(y.busId ?? '')), driver, mode };
}

function nicOf(d: Device, where: string): NicEntry {
  const a = d.attributes ?? {};
  const bus = stringOf(a[`${DRANET}/pciAddress`]);
  const vendor = stringOf(a[`${DRANET}/pciVendor`]);
  const device = stringOf(a[`${DRANET}/pciDevice`]);
  const sub = stringOf(a[`${DRANET}/pciSubsystem`]);
  if (bus === undefined) throw new FakegpuError(where, 'has no dra.net/pciAddress');
  const model =
    NIC_MODELS.find((m) => m.vendorName === vendor && m.deviceName === device && m.subsystem === sub) ??
    NIC_MODELS.find((m) => m.vendorName === vendor && m.deviceName === device);
  if (!model)
    throw new FakegpuError(
      where,
      `${show(`${vendor ?? '?'} ${device ?? '?'}`)} is not in fakegpu's NIC catalog (${NIC_MODELS.map((m) => m.key).join(', ')})`,
    );
  const e: NicEntry = { busId: bus, model: model.key };
  const ifName = stringOf(a[`${DRANET}/ifName`]);
  if (ifName !== undefined) e.ifName = ifName;
  const rdma = stringOf(a[`${DRANET}/rdmaDevice`]);
  if (rdma !== undefined) e.rdmaDevice = rdma;
  e.pcieRoot = stringOf(a[STD.pcieRoot]) ?? null;
  e.numaNode = intOf(a[`${DRANET}/numaNode`]) ?? -1;
  const mac = stringOf(a[`${DRANET}/mac`]);
  if (mac !== undefined) e.mac = mac;
  const mtu = intOf(a[`${DRANET}/mtu`]);
  if (mtu !== undefined) e.mtu = mtu;
  const ipv4 = stringOf(a[`${DRANET}/ipv4`]);
  if (ipv4 !== undefined) e.ipv4 = ipv4;
  return e;
}

/** The machine behind one node's slices of NVIDIA's driver (and DRANET's, where published). */
export function machineFromSlices(node: string, slices: readonly ResourceSlice[]): SliceMachine {
  const gpuSlices = slices.filter((x) => x.spec.driver === DRIVER_NAME);
  if (gpuSlices.length === 0) throw new FakegpuError(`node ${node}`, `has no ${DRIVER_NAME} slice`);
  const { gpus, driver, mode } = gpusOf(gpuSlices, node);
  if (gpus.length === 0) throw new FakegpuError(`node ${node}`, `its ${DRIVER_NAME} slices list no device`);
  const spec: ProfileSpec = { gpus };
  if (driver) spec.driver = driver;
  if (mode === 'HMM' || mode === 'ATS' || mode === 'None') spec.addressingMode = mode;
  else if (mode === null && driver?.version !== undefined && Number(driver.version.split('.')[0]) >= 580)
    spec.addressingMode = 'Unsupported';
  const nicSlices = slices.filter((x) => x.spec.driver === DRANET);
  if (nicSlices.length > 0)
    spec.nics = nicSlices.flatMap((x) =>
      (x.spec.devices ?? []).map((d) => nicOf(d, `node ${node} device ${d.name}`)),
    );
  return { spec, dynamicMig: gpuSlices.some((x) => (x.spec.sharedCounters ?? []).length > 0) };
}
