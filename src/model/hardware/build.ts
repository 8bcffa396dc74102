import { modelLookup } from './models.js';
import { findNicModel, type NicModel } from '../catalog/nics.js';
import { FakegpuError, show } from '../../errors.js';
import { placeLayout } from '../mig/layout.js';
import type { Placed } from '../mig/placement.js';
import type { ResolvedProfile } from '../profile/load.js';
import {
  gpuCount,
  MAX_GPUS,
  type GpuEntry,
  type MigSpec,
  type NicEntry,
  type ProfileSpec,
} from '../preset/machine-spec.js';
import {
  cudaVersionForDriver,
  cudaVersionToNvml,
  DEFAULT_DRIVER_VERSION,
  hasAddressingModeCall,
} from './driver.js';
import { gpuUuid, nicMac, rackFabric } from './identity.js';
import { fabricManagerPartitions, moduleIdOf } from './fabric-manager.js';
import type { AddressingMode, Fabric, GpuHardware, Machine, NicHardware } from './machine.js';
import { canonicalBusId, canonicalPcieRoot, rootOfOwnBus } from './pci.js';

export interface BuildOptions {
  nodeName: string;
  /** The node runs the driver with DynamicMIG: Ampere MIG-capable GPUs are left in MIG mode without instances. */
  dynamicMig: boolean;
  /** Overrides the profile's driver version (the `--driver-version` flag). */
  driverVersion?: string | undefined;
  /** The node's rack, for GPUs in an NVLink fabric; default: the profile's, else the node itself. */
  rack?: string | undefined;
}

/** A GPU before identities are fixed: each field remembers which input line set it, for error messages. */
interface Draft {
  field: string;
  entry: GpuEntry;
  busId: string;
}

export { MAX_GPUS } from '../preset/machine-spec.js';

const GPU_GUID = /^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function expandGpus(spec: ProfileSpec): Draft[] {
  const entries = spec.gpus;
  if (!entries || entries.length === 0) {
    throw new FakegpuError(
      'spec.gpus',
      'no GPUs: list GPUs by model and count, or start from a preset with spec.preset',
    );
  }
  const base = 'spec.gpus';
  const lookup = modelLookup(spec);
  // Counted before expanding, so a profile of thousands of GPUs costs nothing to refuse.
  const total = gpuCount(entries);
  if (total > MAX_GPUS) {
    throw new FakegpuError(
      base,
      `${total} GPUs; a node has at most ${MAX_GPUS}, as NVIDIA's driver gives GPUs the device minors 0-254 (minor 255 is /dev/nvidiactl)`,
    );
  }
  const drafts: Draft[] = [];
  const pending: { field: string; entry: GpuEntry }[] = [];
  entries.forEach((entry, i) => {
    const field = `${base}[${i}]`;
    lookup(entry.model, `${field}.model`);
    const count = entry.count ?? 1;
    if (entry.busId !== undefined) {
      if (count > 1) {
        throw new FakegpuError(
          `${field}.busId`,
          `a bus ID names one GPU but count is ${count}; list the GPUs one by one`,
        );
      }
      drafts.push({ field, entry, busId: canonicalBusId(entry.busId, `${field}.busId`) });
    } else {
      for (let n = 0; n < count; n++) pending.push({ field, entry });
    }
    if (count > 1 && entry.uuid !== undefined) {
      throw new FakegpuError(
        `${field}.uuid`,
        `a UUID names one GPU but count is ${count}; list the GPUs one by one`,
      );
    }
    if (count > 1 && entry.minor !== undefined) {
      throw new FakegpuError(
        `${field}.minor`,
        `a minor number names one GPU but count is ${count}; list the GPUs one by one`,
      );
    }
  });
  // GPUs without a bus ID get the lowest free buses from 0x01, each on its own bus as a VM lays them out.
  // At most MAX_GPUS (255) GPUs always fit buses 01-ff of domain 0000: each GPU with a bus ID of its own
  // takes at most one of those buses from the others.
  const used = new Set(drafts.map((d) => d.busId));
  let bus = 1;
  for (const p of pending) {
    let id = `0000:${bus.toString(16).padStart(2, '0')}:00.0`;
    while (used.has(id)) {
      bus++;
      id = `0000:${bus.toString(16).padStart(2, '0')}:00.0`;
    }
    bus++;
    used.add(id);
    drafts.push({ ...p, busId: id });
  }
  return drafts;
}

function applyOverrides(drafts: Draft[], spec: ProfileSpec): Draft[] {
  const sorted = [...drafts].sort((a, b) => a.busId.localeCompare(b.busId));
  (spec.overrides ?? []).forEach((o, i) => {
    const field = `spec.overrides[${i}]`;
    const target = sorted[o.index];
    if (!target) {
      throw new FakegpuError(
        `${field}.index`,
        `${o.index} is not a GPU index; this machine has GPUs 0 to ${sorted.length - 1}`,
      );
    }
    const { index: _index, ...changes } = o;
    const entry: GpuEntry = { ...target.entry, ...changes };
    const busId = o.busId === undefined ? target.busId : canonicalBusId(o.busId, `${field}.busId`);
    sorted[o.index] = { field, entry, busId };
  });
  return sorted.sort((a, b) => a.busId.localeCompare(b.busId));
}

function checkUnique<T>(
  items: readonly T[],
  key: (t: T) => string | undefined,
  what: string,
  field: (t: T) => string,
): void {
  const seen = new Map<string, T>();
  for (const it of items) {
    const k = key(it);
    if (k === undefined) continue;
    const prev = seen.get(k);
    if (prev !== undefined) {
      throw new FakegpuError(field(it), `duplicate ${what} ${show(k)}; ${field(prev)} has it already`);
    }
    seen.set(k, it);
  }
}

function migFor(
  draft: Draft,
  spec: ProfileSpec,
  opts: BuildOptions,
): { enabled: boolean; instances: Placed[] } {
  const model = modelLookup(spec)(draft.entry.model, `${draft.field}.model`);
  const own = draft.entry.mig;
  const mig: MigSpec | undefined = own ?? spec.mig;
  const field = own ? `${draft.field}.mig` : 'spec.mig';
  const hasLayout =
    mig?.layout !== undefined &&
    (typeof mig.layout === 'string' ? mig.layout.trim() !== '' : mig.layout.length > 0);
  const wantsMig = mig?.mode === 'enabled' || hasLayout;
  if (!model.mig) {
    // A machine-wide MIG default simply does not apply to GPUs without MIG, as mig-parted skips them.
    if (wantsMig && own) throw new FakegpuError(field, `${model.key} (${model.name}) does not support MIG`);
    return { enabled: false, instances: [] };
  }
  if (mig?.mode === 'disabled' && hasLayout) {
    throw new FakegpuError(`${field}.layout`, 'a MIG layout needs MIG mode enabled, but mode is "disabled"');
  }
  if (hasLayout && opts.dynamicMig) {
    throw new FakegpuError(
      `${field}.layout`,
      'a static MIG layout cannot be combined with dynamic MIG: the driver destroys MIG devices no claim holds at start',
    );
  }
  const instances =
    hasLayout && mig.layout !== undefined ? placeLayout(model, mig.layout, `${field}.layout`) : [];
  // Ampere cannot toggle MIG without a GPU reset, so a dynamic-MIG node has MIG mode switched on beforehand.
  const implied = opts.dynamicMig && mig?.mode === undefined && model.architecture === 'Ampere';
  return { enabled: wantsMig || implied, instances };
}

function addressingMode(
  spec: ProfileSpec,
  coherent: boolean,
  driverVersion: string,
  field: string,
): AddressingMode | null {
  const mode = spec.addressingMode;
  if (mode === 'Unsupported') return null;
  if (!hasAddressingModeCall(driverVersion, field)) return null;
  if (mode) return mode;
  return coherent ? 'ATS' : 'HMM';
}

function rootFor(given: string | null | undefined, busId: string, field: string): string | null {
  if (given === null) return null;
  if (given === undefined) return rootOfOwnBus(busId);
  const root = canonicalPcieRoot(given, field);
  // `pci<domain>:<bus>`: a root complex only holds functions of its own PCI domain.
  const domain = root.slice(3, 7);
  if (domain !== busId.slice(0, 4)) {
    throw new FakegpuError(
      field,
      `${show(given)} is in PCI domain ${domain} but the bus ID ${show(busId)} is in domain ${busId.slice(0, 4)}; a device sits under a root of its own domain, e.g. "pci${busId.slice(0, 4)}:00"`,
    );
  }
  return root;
}

/** The kernel's names for RDMA devices: mlx5 counts its functions in bus order, EFA names its slot. */
function defaultRdmaDevice(model: NicModel, busId: string, mlxIndex: number): string {
  if (model.vendorId === '15b3') return `mlx5_${mlxIndex}`;
  const [, bus = '0', devFn = '0'] = busId.split(':');
  const dev = devFn.split('.')[0] ?? '0';
  return `rdmap${Number.parseInt(bus, 16)}s${Number.parseInt(dev, 16)}`;
}

function buildNics(entries: readonly NicEntry[], base: string, nodeName: string): NicHardware[] {
  const drafts = entries.map((n, i) => {
    const field = `${base}[${i}]`;
    return {
      n,
      field,
      model: findNicModel(n.model, `${field}.model`),
      busId: canonicalBusId(n.busId, `${field}.busId`),
    };
  });
  const mlx = drafts
    .filter((d) => d.model.rdma && d.model.vendorId === '15b3')
    .map((d) => d.busId)
    .sort();
  const nics = drafts.map(({ n, field, model, busId }): NicHardware & { field: string } => {
    if (n.ifName !== undefined && model.encapsulation === null) {
      throw new FakegpuError(
        `${field}.ifName`,
        `a ${model.key} has no network interface (it is an RDMA-only function); remove ifName`,
      );
    }
    if (n.ifName === undefined && model.encapsulation !== null) {
      throw new FakegpuError(`${field}.ifName`, `a ${model.key} has a network interface: give its name`);
    }
    if (n.rdmaDevice !== undefined && !model.rdma) {
      throw new FakegpuError(`${field}.rdmaDevice`, `a ${model.key} has no RDMA device; remove rdmaDevice`);
    }
    const netdev = model.encapsulation !== null;
    return {
      field,
      model,
      ifName: n.ifName ?? null,
      busId,
      pcieRoot: rootFor(n.pcieRoot, busId, `${field}.pcieRoot`),
      numaNode: n.numaNode ?? -1,
      rdmaDevice: model.rdma ? (n.rdmaDevice ?? defaultRdmaDevice(model, busId, mlx.indexOf(busId))) : null,
      mac: netdev ? (n.mac ?? nicMac(nodeName, busId)) : null,
      mtu: netdev ? (n.mtu ?? model.mtu) : null,
      ipv4: n.ipv4 ?? null,
      primary: n.primary ?? false,
      speedGbps: n.speedGbps ?? null,
    };
  });
  checkUnique(
    nics,
    (n) => n.busId,
    'bus ID',
    (n) => `${n.field}.busId`,
  );
  checkUnique(
    nics,
    (n) => n.ifName ?? undefined,
    'interface name',
    (n) => `${n.field}.ifName`,
  );
  checkUnique(
    nics,
    (n) => n.rdmaDevice ?? undefined,
    'RDMA device name',
    (n) => `${n.field}.rdmaDevice`,
  );
  // A MAC names one interface on a link; two alike would make DRANET's mac attribute ambiguous.
  checkUnique(
    nics,
    (n) => n.mac ?? undefined,
    'MAC address',
    (n) => `${n.field}.mac`,
  );
  return nics.map(({ field: _field, ...n }) => n);
}

/** Builds the hardware model of one node. Pure: the same profile, node and options give the same machine. */
export function buildMachine(profile: ResolvedProfile, opts: BuildOptions): Machine {
  const spec = profile.spec;
  const lookup = modelLookup(spec);
  const driverField = opts.driverVersion !== undefined ? '--driver-version' : 'spec.driver.version';
  const driverVersion = (opts.driverVersion ?? spec.driver?.version ?? DEFAULT_DRIVER_VERSION).trim();
  const cudaText =
    opts.driverVersion === undefined && spec.driver?.cudaVersion !== undefined
      ? spec.driver.cudaVersion
      : cudaVersionForDriver(driverVersion, driverField);
  const cudaDriverVersion = cudaVersionToNvml(cudaText, 'spec.driver.cudaVersion');

  const drafts = applyOverrides(expandGpus(spec), spec);
  checkUnique(
    drafts,
    (d) => d.busId,
    'bus ID',
    (d) => `${d.field}.busId`,
  );

  const gpus = drafts.map((d, index): GpuHardware & { field: string } => {
    const model = lookup(d.entry.model, `${d.field}.model`);
    const uuid = d.entry.uuid ?? gpuUuid(opts.nodeName, d.busId, model.key);
    if (!GPU_GUID.test(uuid)) {
      throw new FakegpuError(
        `${d.field}.uuid`,
        `${show(uuid)} is not a GPU UUID; expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in lower-case hex`,
      );
    }
    const mig = migFor(d, spec, opts);
    return {
      field: d.field,
      index,
      minor: d.entry.minor ?? index,
      model,
      busId: d.busId,
      pcieRoot: rootFor(d.entry.pcieRoot, d.busId, `${d.field}.pcieRoot`),
      numaNode: d.entry.numaNode ?? 0,
      uuid,
      addressingMode: addressingMode(spec, model.coherentWithCpu === true, driverVersion, driverField),
      migEnabled: mig.enabled,
      moduleId: moduleIdOf(model, index, drafts.length),
      eventsSupported: d.entry.nvmlEvents !== 'unsupported',
      migInstances: mig.instances,
    };
  });
  checkUnique(
    gpus,
    (g) => String(g.minor),
    'minor number',
    (g) => `${g.field}.minor`,
  );
  checkUnique(
    gpus,
    (g) => g.uuid,
    'UUID',
    (g) => `${g.field}.uuid`,
  );

  const nics = buildNics(spec.nics ?? [], 'spec.nics', opts.nodeName);
  nics.forEach((n, i) => {
    const gpu = gpus.find((g) => g.busId === n.busId);
    if (gpu)
      throw new FakegpuError(`spec.nics[${i}].busId`, `${show(n.busId)} is ${gpu.field}'s bus ID already`);
  });

  return {
    profile: profile.name,
    nodeName: opts.nodeName,
    driverVersion,
    cudaDriverVersion,
    gpus: gpus.map(({ field: _field, ...g }) => g),
    nics,
    fabric: fabricOf(spec.fabric, gpus, opts),
    fabricManager: fabricManagerPartitions(gpus.map((g) => g.model)),
  };
}

/** Every GPU of an NVLink-fabric model reports the rack's domain; a mix of models has none. */
function fabricOf(
  spec: ProfileSpec['fabric'],
  gpus: readonly GpuHardware[],
  opts: BuildOptions,
): Machine['fabric'] {
  if (gpus.length === 0 || !gpus.every((g) => g.model.nvlinkFabric === true)) return null;
  return nodeFabric(spec, opts.nodeName, opts.rack);
}

/** The fabric a node of an NVLink-fabric machine reports: the profile's fixed values, else its rack's. */
export function nodeFabric(spec: ProfileSpec['fabric'], nodeName: string, rack?: string): Fabric {
  const derived = rackFabric(rack ?? spec?.rack ?? nodeName);
  return {
    clusterUuid: spec?.clusterUuid ?? derived.clusterUuid,
    cliqueId: spec?.cliqueId ?? derived.cliqueId,
  };
}
