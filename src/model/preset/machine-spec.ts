import { z } from 'zod';
import { show } from '../../errors.js';
import { LIMITS } from '../../kube/types/limits.js';

/**
 * The spec a machine is written in: presets are written in it, and a user's MachineProfile carries one
 * that is folded over its preset. It sits below both so that imports point one way, profile → preset.
 */

/** A strict object whose unknown-field error lists the fields that are allowed. */
export function strict<T extends z.ZodRawShape>(shape: T) {
  return z.strictObject(shape, {
    error: (iss) =>
      iss.code === 'unrecognized_keys'
        ? `unknown field ${iss.keys.map((k) => show(k)).join(', ')}; allowed fields: ${Object.keys(shape).join(', ')}`
        : undefined,
  });
}

export const nonEmpty = z.string().trim().min(1);

/**
 * NVIDIA's kernel module gives GPUs the character device minors 0-254 (`/dev/nvidia0` to `/dev/nvidia254`)
 * and 255 to `/dev/nvidiactl`, and the driver names devices by minor: no node has more GPUs than that.
 */
export const MAX_GPUS = 255;

/** A list with at most `max` items, whose refusal says the bound and why there is one. */
function atMost<T extends z.ZodType>(item: T, max: number, why: string) {
  return z.array(item).max(max, {
    error: (iss) =>
      `${Array.isArray(iss.input) ? iss.input.length : 'too many'} items; at most ${max} are allowed, ${why}`,
  });
}

export const ADDRESSING_MODES = ['HMM', 'ATS', 'None', 'Unsupported'] as const;

export const MigSpec = strict({
  mode: z
    .enum(['enabled', 'disabled'])
    .optional()
    .describe(
      'MIG mode, as `nvidia-smi -mig` sets it. Default: disabled, except on Ampere GPUs under dynamic MIG and where a layout is given.',
    ),
  layout: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe(
      'Static MIG instances present at boot, e.g. `1g.10gb x7` or `[3g.40gb@0, 2g.20gb@4]` (profile, optionally `@<placement>`). Default: none.',
    ),
});
export type MigSpec = z.infer<typeof MigSpec>;

/** Per-GPU facts of the machine; any omitted one is derived. */
const gpuPlacement = {
  busId: nonEmpty
    .optional()
    .describe(
      'PCI bus ID, e.g. `0000:18:00.0`. Default: `0000:01:00.0`, `0000:02:00.0`, … for the GPUs without one.',
    ),
  pcieRoot: nonEmpty
    .nullable()
    .optional()
    .describe(
      'PCIe root complex, e.g. `pci0000:15`; `null` where sysfs shows none, and the driver then omits the attribute. Default: the root of its own bus, `pci<domain>:<bus>`.',
    ),
  numaNode: z.number().int().min(-1).optional().describe('NUMA node; -1: none. Default: 0.'),
  /** 255 is `/dev/nvidiactl`, never a GPU. */
  minor: z
    .number()
    .int()
    .min(0)
    .max(254)
    .optional()
    .describe('Device minor, `/dev/nvidia<minor>`. Default: the NVML index (PCI bus order).'),
  uuid: nonEmpty
    .optional()
    .describe(
      'GPU UUID, `GPU-` and a lower-case UUID. Default: derived from node name, bus ID and model, stable per node.',
    ),
  mig: MigSpec.optional().describe("This GPU's MIG settings. Default: `spec.mig`."),
  nvmlEvents: z
    .enum(['supported', 'unsupported'])
    .optional()
    .describe(
      'Whether NVML can register health events on this GPU (`unsupported`: `nvmlDeviceGetSupportedEventTypes` answers NOT_SUPPORTED, as on GPUs and vGPUs that report no XIDs). Default: supported.',
    ),
};

export const GpuEntry = strict({
  model: nonEmpty.describe(
    'A GPU model of the catalog (`H100-SXM5-80GB`, …; `fakegpu profiles` lists the presets using them) or a `spec.models[].key`.',
  ),
  count: z
    .number()
    .int()
    .min(1)
    .max(64)
    .optional()
    .describe('How many GPUs this entry stands for; one with a bus ID, UUID or minor must be 1. Default: 1.'),
  ...gpuPlacement,
});
export type GpuEntry = z.infer<typeof GpuEntry>;

/** How many GPUs the entries list, before they are expanded into GPUs. */
export function gpuCount(entries: readonly GpuEntry[] | undefined): number {
  return (entries ?? []).reduce((n, e) => n + (e.count ?? 1), 0);
}

export const GpuOverride = strict({
  index: z
    .number()
    .int()
    .min(0)
    .describe("NVML index (position in PCI bus order) of the GPU to change, the preset's or `spec.gpus`'."),
  ...gpuPlacement,
});
export type GpuOverride = z.infer<typeof GpuOverride>;

/** Linux's `dev_valid_name`: IFNAMSIZ is 16 bytes with the NUL; "/" and ":" would break sysfs and aliases. */
const IFNAME_BYTES = 15;
const ifName = nonEmpty.refine(
  (s) => Buffer.byteLength(s) <= IFNAME_BYTES && s !== '.' && s !== '..' && !/[/:\s]/.test(s),
  `must be a Linux interface name: 1 to ${IFNAME_BYTES} bytes, not "." or "..", without "/", ":" or whitespace`,
);

/** The kernel's IB_DEVICE_NAME_MAX is 64 bytes with the NUL; the name is a sysfs directory. */
const RDMA_NAME_BYTES = 63;
const rdmaDevice = nonEmpty.refine(
  (s) => Buffer.byteLength(s) <= RDMA_NAME_BYTES && !/[/\s]/.test(s),
  `must be an RDMA device name: 1 to ${RDMA_NAME_BYTES} bytes, without "/" or whitespace`,
);

const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const IPV4_CIDR = new RegExp(`^${OCTET}(\\.${OCTET}){3}/(3[0-2]|[12]?[0-9])$`);

export const NicEntry = strict({
  ifName: ifName
    .optional()
    .describe(
      'Kernel interface name, e.g. `ens33`: 1 to 15 bytes, not `.` or `..`, without `/`, `:` or whitespace. Default: none, for RDMA-only functions (EFA, InfiniBand VFs) that have no netdev.',
    ),
  busId: nonEmpty.describe('PCI bus ID of the function, e.g. `0000:10:1b.0`.'),
  pcieRoot: nonEmpty
    .nullable()
    .optional()
    .describe(
      'PCIe root complex; `null` where sysfs shows none (Hyper-V vPCI). Default: the root of its own bus, `pci<domain>:<bus>`.',
    ),
  numaNode: z.number().int().min(-1).optional().describe('NUMA node; -1: none. Default: -1.'),
  model: nonEmpty.describe('A key of the NIC catalog, e.g. `ConnectX-7`, `ConnectX-8`, `EFA`, `ENA`.'),
  rdmaDevice: rdmaDevice
    .optional()
    .describe(
      "The RDMA device's name (`mlx5_0`, `rdmap16s27`), for models with RDMA: 1 to 63 bytes, without `/` or whitespace. Default: `mlx5_<n>` in bus order, or EFA's `rdmap<bus>s<slot>`.",
    ),
  mac: z
    .string()
    .regex(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/, 'must be six lower-case hex pairs, e.g. "0e:96:fe:e8:a3:f5"')
    .optional()
    .describe(
      'MAC address, for functions with a netdev. Default: a locally administered address derived from node name and bus ID.',
    ),
  mtu: z.number().int().min(68).max(65535).optional().describe("MTU of the netdev. Default: the model's."),
  ipv4: z
    .string()
    .regex(
      IPV4_CIDR,
      'must be an IPv4 address with prefix: four numbers from 0 to 255 and a prefix length from 0 to 32, e.g. "10.0.0.5/24"',
    )
    .optional()
    .describe(
      'Address with prefix length, e.g. `192.168.155.224/19`, published as DRANET does. Default: none.',
    ),
  primary: z
    .boolean()
    .optional()
    .describe("Carries the node's default route: DRANET leaves it out of its slices. Default: false."),
  speedGbps: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Link speed in Gb/s, shown by `fakegpu topo`. Default: none.'),
});
export type NicEntry = z.infer<typeof NicEntry>;

export const DriverSpec = strict({
  version: nonEmpty
    .optional()
    .describe(
      'NVIDIA driver version as `nvidia-smi` shows it, e.g. `580.126.20`; `render --driver-version` overrides it. Default: 580.126.20.',
    ),
  cudaVersion: nonEmpty
    .optional()
    .describe("CUDA driver API version the driver reports, e.g. `13.0`. Default: the driver branch's."),
});

/**
 * The machine's place in a multi-node NVLink fabric, for GPUs that have one: NVL72 racks give every
 * GPU of a rack (one NVLink partition) the same cluster UUID and clique. Unset: derived from the rack.
 */
export const FabricSpec = strict({
  rack: nonEmpty
    .optional()
    .describe(
      "Names the rack (NVLink domain) the node is in; nodes of one rack share a clique. A node's `fakegpu.dev/rack` label wins over it. Default: the node itself.",
    ),
  clusterUuid: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'must be a lower-case UUID')
    .optional()
    .describe("NVML's fabric `clusterUuid`, lower case. Default: derived from the rack."),
  cliqueId: z
    .number()
    .int()
    .min(0)
    .max(0xffffffff)
    .optional()
    .describe("NVML's `cliqueId`: the NVLink partition within the cluster. Default: derived from the rack."),
});
export type FabricSpec = z.infer<typeof FabricSpec>;

/** 2^63 - 1 bytes, in whole MiB. */
const MAX_MEMORY_MIB = 2 ** 43 - 1;

/**
 * A GPU the catalog does not have, with the facts nvidia-smi shows (`capture node` writes one for a
 * product it does not know). No MIG: a MIG table cannot be read from nvidia-smi -q -x.
 */
export const CustomModel = strict({
  key: nonEmpty.describe('What `gpus[].model` names it by.'),
  name: nonEmpty
    .refine(
      (s) => Buffer.byteLength(s) <= LIMITS.stringAttributeBytes,
      `must be at most ${LIMITS.stringAttributeBytes} bytes: it is published as the productName attribute, and the API server refuses longer string attributes`,
    )
    .describe('`nvmlDeviceGetName`, e.g. `NVIDIA H20`: the `productName` attribute.'),
  architecture: z
    .enum(['Turing', 'Ampere', 'Ada Lovelace', 'Hopper', 'Blackwell'])
    .describe('GPU architecture.'),
  computeCapability: z
    .string()
    .regex(/^\d+\.\d+$/, 'must be <major>.<minor>, e.g. "9.0"')
    .describe('CUDA compute capability, e.g. `9.0`.'),
  memoryMiB: z
    .number()
    .int()
    .positive()
    .max(MAX_MEMORY_MIB, {
      error: `must be at most ${MAX_MEMORY_MIB} (2^43 - 1): the memory capacity in bytes must fit a signed 64-bit integer`,
    })
    .describe(
      'Memory in MiB, as `nvidia-smi` shows it; at most 2^43 - 1, so that the bytes fit a 64-bit quantity.',
    ),
  pciDeviceId: z
    .string()
    .regex(/^(0x)?[0-9a-fA-F]{4}$/, 'must be 4 hex digits, e.g. "2329"')
    .describe('PCI device ID in hex, e.g. `2329`.'),
  pciSubsystemId: z
    .string()
    .regex(/^(0x)?[0-9a-fA-F]{4}$/, 'must be 4 hex digits, e.g. "1996"')
    .optional()
    .describe('PCI subsystem ID in hex, e.g. `1996`. Default: none.'),
  multiprocessors: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Streaming multiprocessors. Default: none.'),
  powerLimitW: z.number().positive().optional().describe('Power limit in watts. Default: none.'),
});
export type CustomModel = z.infer<typeof CustomModel>;

/** Two overrides of one GPU would leave it to their order which wins. */
function uniqueIndexes(overrides: readonly GpuOverride[], ctx: z.RefinementCtx): void {
  const seen = new Map<number, number>();
  overrides.forEach((o, i) => {
    const first = seen.get(o.index);
    if (first === undefined) seen.set(o.index, i);
    else
      ctx.addIssue({
        code: 'custom',
        path: [i, 'index'],
        input: o.index,
        message: `duplicate override of GPU ${o.index}; spec.overrides[${first}] changes it already: merge the two`,
      });
  });
}

export const ProfileSpec = strict({
  preset: nonEmpty
    .optional()
    .describe(
      "A built-in preset (`fakegpu profiles`) this spec is folded over: each field given replaces the preset's, `driver` and `mig` field by field, `overrides` added to its own. Default: none.",
    ),
  models: atMost(CustomModel, MAX_GPUS, 'one per GPU of a node at most')
    .optional()
    .describe('GPUs the catalog does not have, for `gpus[].model` to name. Default: none.'),
  description: z
    .string()
    .optional()
    .describe('Free text, shown by `fakegpu profiles` for presets. Default: none.'),
  driver: DriverSpec.optional().describe('The NVIDIA driver the node runs.'),
  addressingMode: z
    .enum(ADDRESSING_MODES)
    .optional()
    .describe(
      "The GPUs' `addressingMode` attribute (`Unsupported`: not published). Default: ATS on cache-coherent (Grace) machines, else HMM, where the driver has the call.",
    ),
  gpus: atMost(GpuEntry, MAX_GPUS, `as a node has at most ${MAX_GPUS} GPUs`)
    .min(1)
    .optional()
    .describe(
      "The GPUs, in entries of one model; replaces the preset's GPUs when given. Default: the preset's.",
    ),
  mig: MigSpec.optional().describe('MIG settings of every GPU that does not set its own.'),
  overrides: atMost(GpuOverride, MAX_GPUS, 'one per GPU of a node at most')
    .superRefine(uniqueIndexes)
    .optional()
    .describe('Changes to single GPUs, by NVML index, after `gpus` is laid out. Default: none.'),
  nics: z
    .array(NicEntry)
    .optional()
    .describe("The NICs; replaces the preset's NICs when given. Default: the preset's, else none."),
  fabric: FabricSpec.optional().describe(
    "The machine's place in a multi-node NVLink fabric (GB200, GB300); ignored for GPUs without one.",
  ),
});
export type ProfileSpec = z.infer<typeof ProfileSpec>;
