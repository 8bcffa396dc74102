import { XMLParser } from 'fast-xml-parser';
import { SyntaxValidator } from 'fast-xml-validator';
import { clip, FakegpuError, show } from '../../errors.js';

/**
 * `nvidia-smi -q -x` as read from a real node: the facts a machine profile is made of, nothing else.
 * Element names are nvidia-smi's (nvsmi_device_v10 to v13 DTDs); a value nvidia-smi prints as `N/A`
 * is absent here.
 */

export interface SmiXmlMigDevice {
  gpuInstanceId: number;
  computeInstanceId: number;
  multiprocessors: number;
  copyEngines: number;
  decoders: number;
  encoders: number;
  jpegEngines: number;
  ofaEngines: number;
  memoryMiB: number;
}

export interface SmiXmlGpu {
  /** `gpu id` attribute and `pci/pci_bus_id`, NVML form `00000000:07:00.0`. */
  busId: string;
  productName: string;
  architecture: string | undefined;
  uuid: string;
  minor: number | undefined;
  /** `pci_device_id` `20B010DE`: device 0x20b0 of vendor 0x10de. */
  pciDeviceId: number | undefined;
  pciSubsystemId: number | undefined;
  memoryMiB: number | undefined;
  migMode: 'Enabled' | 'Disabled' | undefined;
  migDevices: SmiXmlMigDevice[];
  /** `<fabric>` of NVLink-fabric GPUs (GB200, GB300), when the fabric manager registered them. */
  fabric: { clusterUuid: string; cliqueId: number } | undefined;
  addressingMode: string | undefined;
  defaultPowerLimitW: number | undefined;
  /** Present in the capture and never written to a profile: the board's serial. */
  serial: string | undefined;
}

export interface SmiXmlLog {
  /** `nvsmi_device_v12.dtd` → 12; undefined where the DOCTYPE is missing. */
  dtdVersion: number | undefined;
  driverVersion: string;
  cudaVersion: string | undefined;
  gpus: SmiXmlGpu[];
}

type Node = Record<string, unknown>;

/**
 * The parser's guards against nesting and entity bombs, written out so the refusal can name them.
 * nvidia-smi nests elements six deep and declares no entities of its own.
 */
const XML_LIMITS = {
  maxNestedTags: 100,
  maxEntityCount: 100,
  maxEntitySize: 10_000,
  maxTotalExpansions: 10_000,
  maxExpandedLength: 100_000,
};

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  isArray: (name) => name === 'gpu' || name === 'mig_device',
  maxNestedTags: XML_LIMITS.maxNestedTags,
  processEntities: {
    enabled: true,
    maxEntityCount: XML_LIMITS.maxEntityCount,
    maxEntitySize: XML_LIMITS.maxEntitySize,
    maxTotalExpansions: XML_LIMITS.maxTotalExpansions,
    maxExpandedLength: XML_LIMITS.maxExpandedLength,
  },
});

/** The parser's message, which names no file and may quote the input, as one line naming the limit. */
function parserRefusal(message: string): string {
  const l = XML_LIMITS;
  const limits: [RegExp, string][] = [
    [/nested tags/i, `more than ${l.maxNestedTags} nested elements`],
    [/entity count/i, `more than ${l.maxEntityCount} entity declarations`],
    [/entity .* size/i, `an entity longer than ${l.maxEntitySize} characters`],
    [/expansion count/i, `more than ${l.maxTotalExpansions} entity expansions`],
    [/expanded content length/i, `entities that expand to more than ${l.maxExpandedLength} characters`],
  ];
  const hit = limits.find(([re]) => re.test(message));
  return hit
    ? `${hit[1]}: past the XML parser's limit, which guards against XML bombs; nvidia-smi -q -x never comes near it`
    : `not accepted by the XML parser (${clip(message)}); give the whole output of nvidia-smi -q -x`;
}

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of a leaf by path; undefined when absent, empty or `N/A`. */
function text(node: unknown, path: string): string | undefined {
  let cur: unknown = node;
  for (const key of path.split('/')) {
    if (!isNode(cur)) return undefined;
    cur = cur[key];
  }
  if (typeof cur !== 'string') return undefined;
  const t = cur.trim();
  return t === '' || t === 'N/A' ? undefined : t;
}

class Reader {
  constructor(
    readonly source: string,
    readonly where: string,
  ) {}

  /** A reader for a nested element, named in messages by its path. */
  at(prefix: string): Reader {
    return new Reader(this.source, `${this.where}${prefix}`);
  }

  fail(path: string, detail: string): never {
    throw new FakegpuError(this.source, `${this.where}${path}: ${detail}`);
  }

  required(node: unknown, path: string): string {
    const v = text(node, path);
    if (v === undefined) this.fail(path, 'missing; nvidia-smi -q -x always prints it');
    return v;
  }

  int(node: unknown, path: string): number | undefined {
    const v = text(node, path);
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) this.fail(path, `${show(v)} is not a whole number`);
    return Number(v);
  }

  /** `81559 MiB`. */
  mib(node: unknown, path: string): number | undefined {
    const v = text(node, path);
    if (v === undefined) return undefined;
    const m = /^(\d+) MiB$/.exec(v);
    if (!m) this.fail(path, `${show(v)} is not a size in MiB (e.g. "81559 MiB")`);
    return Number(m[1]);
  }

  /** `700.00 W`. */
  watts(node: unknown, path: string): number | undefined {
    const v = text(node, path);
    if (v === undefined) return undefined;
    const m = /^(\d+(?:\.\d+)?) W$/.exec(v);
    if (!m) this.fail(path, `${show(v)} is not a power in W (e.g. "700.00 W")`);
    return Number(m[1]);
  }

  /** `20B010DE`: the upper 16 bits are the device, the lower the vendor. */
  pciId(node: unknown, path: string): number | undefined {
    const v = text(node, path);
    if (v === undefined) return undefined;
    if (!/^(0x)?[0-9A-Fa-f]{8}$/.test(v)) this.fail(path, `${show(v)} is not a PCI ID of 8 hex digits`);
    return Number.parseInt(v.replace(/^0x/, '').slice(0, 4), 16);
  }
}

function migDevices(r: Reader, gpu: Node): SmiXmlMigDevice[] {
  const list = isNode(gpu.mig_devices) ? gpu.mig_devices.mig_device : undefined;
  if (!Array.isArray(list)) return [];
  return list.map((d: unknown, i) => {
    const at = r.at(`mig_devices/mig_device[${i}]/`);
    const shared = 'device_attributes/shared/';
    const count = (p: string): number => at.int(d, shared + p) ?? 0;
    return {
      gpuInstanceId: at.int(d, 'gpu_instance_id') ?? at.fail('gpu_instance_id', 'missing'),
      computeInstanceId: at.int(d, 'compute_instance_id') ?? at.fail('compute_instance_id', 'missing'),
      multiprocessors: count('multiprocessor_count'),
      copyEngines: count('copy_engine_count'),
      decoders: count('decoder_count'),
      encoders: count('encoder_count'),
      jpegEngines: count('jpg_count'),
      ofaEngines: count('ofa_count'),
      memoryMiB: at.mib(d, 'fb_memory_usage/total') ?? at.fail('fb_memory_usage/total', 'missing'),
    };
  });
}

function fabric(r: Reader, gpu: Node): SmiXmlGpu['fabric'] {
  const f = gpu.fabric;
  if (!isNode(f)) return undefined;
  const uuid = text(f, 'clusterUuid');
  const clique = text(f, 'cliqueId');
  if (uuid === undefined || clique === undefined) return undefined;
  // Not yet registered with the fabric manager: the all-zero cluster UUID.
  if (/^0{8}-0{4}-0{4}-0{4}-0{12}$/.test(uuid)) return undefined;
  const cliqueId = r.int(f, 'cliqueId') ?? 0;
  return { clusterUuid: uuid.toLowerCase(), cliqueId };
}

function gpuOf(source: string, g: unknown, i: number): SmiXmlGpu {
  if (!isNode(g)) throw new FakegpuError(source, `gpu[${i}]: empty element`);
  const r = new Reader(source, `gpu[${i}]/`);
  const mig = text(g, 'mig_mode/current_mig');
  const busId =
    text(g, 'pci/pci_bus_id') ??
    (typeof g['@id'] === 'string'
      ? g['@id']
      : r.fail('pci/pci_bus_id', 'missing, and the gpu element has no id'));
  return {
    busId,
    productName: r.required(g, 'product_name'),
    architecture: text(g, 'product_architecture'),
    uuid: r.required(g, 'uuid'),
    minor: r.int(g, 'minor_number'),
    pciDeviceId: r.pciId(g, 'pci/pci_device_id'),
    pciSubsystemId: r.pciId(g, 'pci/pci_sub_system_id'),
    memoryMiB: r.mib(g, 'fb_memory_usage/total'),
    migMode: mig === 'Enabled' || mig === 'Disabled' ? mig : undefined,
    migDevices: migDevices(r, g),
    fabric: fabric(r, g),
    addressingMode: text(g, 'addressing_mode'),
    defaultPowerLimitW:
      r.watts(g, 'gpu_power_readings/default_power_limit') ??
      r.watts(g, 'power_readings/default_power_limit'),
    serial: text(g, 'serial'),
  };
}

/** One line for XML that is not well-formed; a cut-off file (elements left open) says so. */
function checkWellFormed(xml: string, source: string): void {
  try {
    SyntaxValidator.validate(xml);
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    const open = /^Invalid '\[(.*)\]' found/.exec(e.message)?.[1];
    const at = e as Error & { line?: number; col?: number };
    if (open !== undefined) {
      const names = open
        .replace(/"/g, '')
        .split(',')
        .filter((n) => n !== '');
      throw new FakegpuError(
        source,
        `the XML ends inside <${names.at(-1) ?? '?'}> (still open: ${names.join(' > ')}): the file is cut off; give the whole output of nvidia-smi -q -x`,
      );
    }
    throw new FakegpuError(
      source,
      `not well-formed XML at line ${at.line ?? '?'}, column ${at.col ?? '?'} (${clip(e.message).replace(/\.$/, '')}); give the whole output of nvidia-smi -q -x`,
    );
  }
}

export function parseSmiXml(xml: string, source: string): SmiXmlLog {
  checkWellFormed(xml, source);
  let doc: unknown;
  try {
    doc = parser.parse(xml);
  } catch (e) {
    throw new FakegpuError(source, parserRefusal(e instanceof Error ? e.message : String(e)));
  }
  const log = isNode(doc) ? doc.nvidia_smi_log : undefined;
  if (!isNode(log))
    throw new FakegpuError(source, 'no <nvidia_smi_log> element; expected the output of nvidia-smi -q -x');
  const dtd = /nvsmi_device_v(\d+)\.dtd/.exec(xml);
  const r = new Reader(source, '');
  const gpus = Array.isArray(log.gpu) ? log.gpu : [];
  if (gpus.length === 0) throw new FakegpuError(source, 'no <gpu> element: nvidia-smi saw no GPU');
  return {
    dtdVersion: dtd?.[1] === undefined ? undefined : Number(dtd[1]),
    driverVersion: r.required(log, 'driver_version'),
    cudaVersion: text(log, 'cuda_version'),
    gpus: gpus.map((g: unknown, i) => gpuOf(source, g, i)),
  };
}
