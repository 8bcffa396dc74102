import { findModel } from '../../model/catalog/index.js';
import type { GpuModel } from '../../model/catalog/types.js';
import { FakegpuError, show } from '../../errors.js';
import { canonicalBusId } from '../../model/hardware/pci.js';
import {
  type CustomModel,
  type GpuEntry,
  type NicEntry,
  type ProfileSpec,
  ADDRESSING_MODES,
} from '../../model/preset/machine-spec.js';
import { modelLookup } from '../../model/hardware/models.js';
import { API_VERSION, KIND, type MachineProfile, type Provenance } from '../../model/profile/schema.js';
import { profileFromObject } from '../../model/profile/load.js';
import { validateProfile } from '../../model/render.js';
import { anonymizeFabric, anonymizeNics } from './anonymize.js';
import { identifyInstance } from './mig.js';
import { checkMigTables, type LgipRow, type LgippRow } from './mig-tables.js';
import type { SmiXmlGpu, SmiXmlLog } from './smi-xml.js';

/**
 * What a real node showed, turned into a MachineProfile: every GPU as nvidia-smi listed it, placed on
 * the PCIe roots and NUMA nodes the other inputs show, with each group of facts marked by the input
 * that confirmed it (docs/fidelity.md's words). Facts no input gave are left for the hardware model to
 * derive, and say so. Serials and processes never reach the profile; UUIDs, MACs, addresses and the
 * fabric's cluster UUID only as read without `anonymize` (anonymize.ts).
 */

/** Where a PCI function sits, as sysfs or lspci show it. */
export interface PciPlace {
  numaNode?: number | undefined;
  /** `pci0000:15`; null where sysfs shows no root complex above the function. */
  pcieRoot?: string | null | undefined;
}

export interface PciFacts {
  /** Per canonical bus ID. */
  places: ReadonlyMap<string, PciPlace>;
  /** The inputs the NUMA nodes and roots came from, e.g. `lspci -D -vmm`, `/sys/bus/pci/devices`. */
  numaFrom: string | undefined;
  rootsFrom: string | undefined;
}

export interface NodeInputs {
  smi: SmiXmlLog;
  /** GPU NUMA nodes by GPU index (nvidia-smi's order) from `nvidia-smi topo -m`, when no PCI input gives them. */
  topoNuma?: ReadonlyMap<number, number> | undefined;
  pci?: PciFacts | undefined;
  /** NICs as the network inputs showed them, with the inputs they came from. */
  nics?: { entries: NicEntry[]; from: string } | undefined;
  /** `nvidia-smi mig -lgip` and `-lgipp`, checked against the catalog's MIG tables. */
  migTables?: { lgip: LgipRow[]; lgipp: LgippRow[]; from: string } | undefined;
  /** Names of the inputs, as the user gave them, for provenance. */
  names: { smi: string; topo?: string | undefined };
}

export interface CaptureOptions {
  name?: string | undefined;
  /**
   * Leave UUIDs and MACs out, so each node of the profile derives its own from its name; replace IPv4
   * addresses and the fabric's cluster UUID (anonymize.ts).
   */
  anonymize: boolean;
}

export interface Captured {
  profile: MachineProfile & { provenance: Provenance };
  warnings: string[];
}

/** Known NVIDIA driver branches (R450 onwards): a newer one may print what this reader does not know. */
const KNOWN_BRANCHES = [
  450, 455, 460, 465, 470, 495, 510, 515, 520, 525, 530, 535, 545, 550, 555, 560, 565, 570, 575, 580, 590,
  595,
];
/** nvsmi_device DTD versions seen in real outputs. */
const KNOWN_DTDS = [10, 11, 12, 13];

function checkCatalog(model: GpuModel, g: SmiXmlGpu, where: string, warnings: string[]): void {
  const differs = (what: string, seen: string, catalog: string): void => {
    warnings.push(
      `${where}: ${what} is ${seen} on this node but ${catalog} in fakegpu's catalog for ${model.key}; slices will show the catalog's`,
    );
  };
  const hex = (n: number): string => `0x${n.toString(16).padStart(4, '0')}`;
  if (g.memoryMiB !== undefined && g.memoryMiB !== model.memoryMiB)
    differs('memory', `${g.memoryMiB} MiB`, `${model.memoryMiB} MiB`);
  if (g.pciDeviceId !== undefined && g.pciDeviceId !== model.pciDeviceId)
    differs('PCI device ID', hex(g.pciDeviceId), hex(model.pciDeviceId));
  if (g.architecture !== undefined && g.architecture !== model.architecture)
    differs('architecture', g.architecture, model.architecture);
}

/** CUDA compute capability by architecture, for a GPU nvidia-smi -q -x names but the catalog lacks. */
const CC_BY_ARCH: Readonly<Record<string, string>> = {
  Turing: '7.5',
  Ampere: '8.0',
  'Ada Lovelace': '8.9',
  Hopper: '9.0',
  Blackwell: '10.0',
};

/**
 * A product the catalog lacks becomes a custom model with what the XML gives; what it does not give
 * (compute capability, SMs) is said in the warning, and MIG instances cannot be described.
 */
function customModel(g: SmiXmlGpu, where: string): { model: CustomModel; warning: string } {
  const arch = g.architecture;
  const cc = arch === undefined ? undefined : CC_BY_ARCH[arch];
  if (arch === undefined || cc === undefined)
    throw new FakegpuError(
      `${where}/product_architecture`,
      `product ${show(g.productName)} is not in fakegpu's GPU catalog and its architecture ${show(arch ?? 'N/A')} is not one fakegpu models (${Object.keys(CC_BY_ARCH).join(', ')})`,
    );
  if (g.pciDeviceId === undefined || g.pciDeviceId === 0 || g.memoryMiB === undefined)
    throw new FakegpuError(
      where,
      `product ${show(g.productName)} is not in fakegpu's GPU catalog, and the XML lacks its ${g.memoryMiB === undefined ? 'memory' : 'PCI device ID'} to describe it`,
    );
  const hex = (n: number): string => n.toString(16).padStart(4, '0');
  const model: CustomModel = {
    key: g.productName.replace(/^NVIDIA /, '').replace(/\s+/g, '-'),
    name: g.productName,
    architecture: arch as CustomModel['architecture'],
    computeCapability: cc,
    memoryMiB: g.memoryMiB,
    pciDeviceId: hex(g.pciDeviceId),
    ...(g.pciSubsystemId ? { pciSubsystemId: hex(g.pciSubsystemId) } : {}),
    ...(g.defaultPowerLimitW ? { powerLimitW: g.defaultPowerLimitW } : {}),
  };
  return {
    model,
    warning: `${where}: product ${show(g.productName)} is not in fakegpu's GPU catalog; captured as custom model ${show(model.key)} from the XML (compute capability ${cc} inferred from ${arch}, SM count a default, no MIG)`,
  };
}
export function captureNode(inputs: NodeInputs, opts: CaptureOptions): Captured {
  const warnings = driverWarnings(inputs.smi, inputs.names.smi);
  const gpus = readGpus(inputs, opts.anonymize, warnings);
  const spec = specOf(inputs, gpus, warnings);
  if (opts.anonymize) {
    if (spec.nics) spec.nics = anonymizeNics(spec.nics);
    if (spec.fabric) spec.fabric = anonymizeFabric(spec.fabric);
  }
  const provenance = provenanceOf(inputs, opts.anonymize, gpus);
  const profile: Captured['profile'] = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: opts.name ?? defaultName(gpus.entries) },
    spec,
    provenance,
  };
  checkCaptured(profile, inputs.names.smi);
  return { profile, warnings };
}

/**
 * What capture writes must be what `validate` accepts, through the same check; a node whose inputs make
 * no valid profile is refused in one line naming the profile's field, and which GPU or NIC it is.
 */
function checkCaptured(profile: Captured['profile'], src: string): void {
  try {
    validateProfile(profileFromObject(profile), { dynamicMig: false });
  } catch (e) {
    if (!(e instanceof FakegpuError)) throw e;
    const m = /^spec\.(gpus|nics)\[(\d+)\]/.exec(e.field);
    const item = m ? profile.spec[m[1] === 'gpus' ? 'gpus' : 'nics']?.[Number(m[2])] : undefined;
    const which =
      item?.busId === undefined ? '' : ` (the ${m?.[1] === 'gpus' ? 'GPU' : 'NIC'} at ${item.busId})`;
    throw new FakegpuError(
      e.field.startsWith('metadata.name') ? '--name' : `${e.field}${which}`,
      `${e.detail}; the profile captured from ${src} would not validate, so nothing was written`,
    );
  }
}

/** A driver or XML newer than this reader may print what it does not know, so the profile wants a check. */
function driverWarnings(smi: SmiXmlLog, src: string): string[] {
  const warnings: string[] = [];
  const branch = Number(/^(\d+)\./.exec(smi.driverVersion)?.[1]);
  if (!KNOWN_BRANCHES.includes(branch))
    warnings.push(
      `${src}: driver ${smi.driverVersion} is of branch R${Number.isNaN(branch) ? '?' : branch}, which fakegpu does not know (R${KNOWN_BRANCHES[0]} to R${KNOWN_BRANCHES.at(-1)}); its facts are taken as read, check the profile`,
    );
  if (smi.dtdVersion !== undefined && !KNOWN_DTDS.includes(smi.dtdVersion))
    warnings.push(
      `${src}: nvsmi_device_v${smi.dtdVersion}.dtd is newer than fakegpu knows (v${KNOWN_DTDS.join(', v')})`,
    );
  return warnings;
}

/** The GPUs as profile entries, and which inputs confirmed which of their facts, for the provenance. */
interface GpusRead {
  entries: GpuEntry[];
  /** Products the catalog lacks, by name, each described once. */
  customs: Map<string, CustomModel>;
  seenIn: { numa: boolean; roots: boolean; mig: boolean; tables: boolean };
}

interface Reading extends GpusRead {
  inputs: NodeInputs;
  anonymize: boolean;
  warnings: string[];
}

/** In PCI bus order, so a GPU's position is its NVML index, by which the other inputs name it. */
function readGpus(inputs: NodeInputs, anonymize: boolean, warnings: string[]): GpusRead {
  const src = inputs.names.smi;
  const gpus = [...inputs.smi.gpus]
    .map((g, i) => ({ g, i, busId: canonicalBusId(g.busId, `${src}: gpu[${i}]/pci/pci_bus_id`) }))
    .sort((a, b) => a.busId.localeCompare(b.busId));
  const r: Reading = {
    inputs,
    anonymize,
    warnings,
    entries: [],
    customs: new Map(),
    seenIn: { numa: false, roots: false, mig: false, tables: false },
  };
  r.entries = gpus.map(({ g, i, busId }, index) => gpuEntry(g, i, busId, index, r));
  return { entries: r.entries, customs: r.customs, seenIn: r.seenIn };
}

/** `i` is the GPU's place in the XML (for messages), `index` its NVML index. */
function gpuEntry(g: SmiXmlGpu, i: number, busId: string, index: number, r: Reading): GpuEntry {
  const where = `${r.inputs.names.smi}: gpu[${i}] (${busId})`;
  const model = modelOf(g, i, where, r);
  const tables = r.inputs.migTables;
  if (tables && tables.lgip.some((row) => row.gpu === index)) {
    const differs = checkMigTables(model, index, tables.lgip, tables.lgipp, `${tables.from}: GPU ${index}`);
    r.warnings.push(...differs);
    if (differs.length === 0) r.seenIn.tables = true;
  }
  const entry: GpuEntry = { model: model.key, busId };
  const place = r.inputs.pci?.places.get(busId);
  if (place?.pcieRoot !== undefined) {
    entry.pcieRoot = place.pcieRoot;
    r.seenIn.roots = true;
  }
  const numa = place?.numaNode ?? r.inputs.topoNuma?.get(index);
  if (numa !== undefined) {
    entry.numaNode = numa;
    r.seenIn.numa = true;
  }
  if (g.minor !== undefined) entry.minor = g.minor;
  if (!r.anonymize) entry.uuid = g.uuid;
  const mig = migOf(g, model, where, r);
  if (mig !== undefined) entry.mig = mig;
  return entry;
}

/** The catalog's model, or for a product the catalog lacks, a custom one from the XML. */
function modelOf(g: SmiXmlGpu, i: number, where: string, r: Reading): GpuModel {
  const src = r.inputs.names.smi;
  try {
    const model = findModel(g.productName, `${src}: gpu[${i}]/product_name`);
    checkCatalog(model, g, where, r.warnings);
    return model;
  } catch (e) {
    if (!(e instanceof FakegpuError)) throw e;
    const custom = customModel(g, `${src}: gpu[${i}]`);
    if (!r.customs.has(custom.model.name)) {
      r.customs.set(custom.model.name, custom.model);
      r.warnings.push(custom.warning);
    }
    return modelLookup({ models: [...r.customs.values()] })(custom.model.key, where);
  }
}

/** The MIG mode and the GPU instances nvidia-smi listed, as placements the catalog's MIG table knows. */
function migOf(g: SmiXmlGpu, model: GpuModel, where: string, r: Reading): GpuEntry['mig'] {
  if (g.migMode === 'Enabled' && !model.mig) {
    if (g.migDevices.length > 0)
      r.warnings.push(
        `${where}: its ${g.migDevices.length} MIG device(s) are left out: a custom model has no MIG table`,
      );
    return undefined;
  }
  if (g.migMode === 'Enabled') {
    r.seenIn.mig = true;
    const layout = g.migDevices
      .filter((d, n, all) => all.findIndex((x) => x.gpuInstanceId === d.gpuInstanceId) === n)
      .map((d) => {
        const found = identifyInstance(model, d);
        if ('error' in found) throw new FakegpuError(`${where} mig_devices`, found.error);
        return `${found.ok.profile.name}@${found.ok.start}`;
      });
    const split = g.migDevices.length - new Set(g.migDevices.map((d) => d.gpuInstanceId)).size;
    if (split > 0)
      r.warnings.push(
        `${where}: ${split} GPU instance(s) are split into several compute instances; the profile has one full compute instance per GPU instance`,
      );
    return layout.length > 0 ? { mode: 'enabled', layout } : { mode: 'enabled' };
  }
  if (g.migMode === 'Disabled' && model.mig) return { mode: 'disabled' };
  return undefined;
}

/** What all GPUs share (driver, addressing mode, NVLink fabric) is the machine's; the NICs come as read. */
function specOf(inputs: NodeInputs, gpus: GpusRead, warnings: string[]): ProfileSpec {
  const { smi } = inputs;
  const src = inputs.names.smi;
  const spec: ProfileSpec = {
    description: `captured from ${src}: ${summary(gpus.entries)}, driver ${smi.driverVersion}`,
    driver: { version: smi.driverVersion, ...(smi.cudaVersion ? { cudaVersion: smi.cudaVersion } : {}) },
    ...(gpus.customs.size > 0 ? { models: [...gpus.customs.values()] } : {}),
    gpus: gpus.entries,
  };
  const modes = new Set(smi.gpus.map((g) => g.addressingMode).filter((m) => m !== undefined));
  const [mode] = modes;
  if (modes.size === 1 && mode !== undefined && (ADDRESSING_MODES as readonly string[]).includes(mode))
    spec.addressingMode = mode as ProfileSpec['addressingMode'];
  const fabrics = new Set(
    smi.gpus.map((g) => (g.fabric ? `${g.fabric.clusterUuid}/${g.fabric.cliqueId}` : '')),
  );
  const [fabric] = smi.gpus.map((g) => g.fabric);
  if (fabric && fabrics.size === 1)
    spec.fabric = { clusterUuid: fabric.clusterUuid, cliqueId: fabric.cliqueId };
  else if (fabrics.size > 1)
    warnings.push(`${src}: GPUs report different NVLink fabrics; the profile leaves them derived`);
  if (inputs.nics) spec.nics = inputs.nics.entries;
  return spec;
}

/** Each group of facts marked by the input that confirmed it, or by how the hardware model derives it. */
function provenanceOf(inputs: NodeInputs, anonymize: boolean, gpus: GpusRead): Provenance {
  const src = inputs.names.smi;
  const { customs, seenIn } = gpus;
  const seen = (from: string) => ({ status: 'confirmed' as const, from });
  const derived = (from: string) => ({ status: 'derived' as const, from });
  const topoName = inputs.names.topo ?? 'nvidia-smi topo -m';
  return {
    gpus:
      customs.size > 0
        ? {
            status: 'inferred',
            from: `${src}, but custom model ${[...customs.values()].map((m) => show(m.key)).join(', ')}: compute capability from the architecture, SM count a default, no MIG`,
          }
        : seen(src),
    busIds: seen(src),
    driver: seen(src),
    uuids: anonymize ? derived('node name and bus ID (--anonymize)') : seen(src),
    pcieRoots: seenIn.roots
      ? seen(inputs.pci?.rootsFrom ?? 'sysfs')
      : derived('each GPU on a root of its own bus (no sysfs input)'),
    numa: seenIn.numa
      ? seen(inputs.pci?.numaFrom ?? topoName)
      : derived('NUMA node 0 for every GPU (no lspci, sysfs or topo input)'),
    mig: seenIn.mig
      ? seen(
          `${src} (GPU instance IDs give the placements)${seenIn.tables ? `; profiles as ${inputs.migTables?.from ?? ''}` : ''}`,
        )
      : seenIn.tables
        ? seen(`${inputs.migTables?.from ?? ''} (the catalog's MIG profiles)`)
        : seen(src),
    nics: inputs.nics
      ? seen(
          `${inputs.nics.from}${anonymize ? ' (--anonymize: MACs derived from node name and bus ID, IPv4 addresses replaced by documentation ones)' : ''}`,
        )
      : derived('none (no network input)'),
    fabric: inputs.smi.gpus[0]?.fabric
      ? seen(`${src}${anonymize ? ' (--anonymize: cluster UUID replaced by one hashed from it)' : ''}`)
      : derived(`no fabric in ${src}`),
  };
}

function summary(entries: readonly GpuEntry[]): string {
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(e.model, (counts.get(e.model) ?? 0) + 1);
  return [...counts].map(([m, n]) => `${n}x ${m}`).join(', ');
}

/** `8x-h100-80gb-hbm3`: a valid object name from what the node has. */
function defaultName(entries: readonly GpuEntry[]): string {
  const name = `captured-${summary(entries)}`
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  return name.slice(0, 253);
}
