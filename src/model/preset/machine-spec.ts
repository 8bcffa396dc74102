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
  /** MIG mode as `nvidia-smi -mig` sets it. Unset: disabled, except Ampere GPUs under dynamic MIG. */
  mode: z.enum(['enabled', 'disabled']).optional(),
  /** Static MIG instances present at boot, e.g. `1g.10gb x7` or `[3g.40gb@0, 2g.20gb@4]`. */
  layout: z.union([z.string(), z.array(z.string())]).optional(),
});
export type MigSpec = z.infer<typeof MigSpec>;

/** Per-GPU facts of the machine; any omitted one is derived. */
const gpuPlacement = {
  busId: nonEmpty.optional(),
  /** `null` where sysfs shows no root complex; the driver then omits the attribute. */
  pcieRoot: nonEmpty.nullable().optional(),
  numaNode: z.number().int().min(-1).optional(),
  /** `/dev/nvidia<minor>`: 255 is `/dev/nvidiactl`, never a GPU. */
  minor: z.number().int().min(0).max(254).optional(),
  uuid: nonEmpty.optional(),
  mig: MigSpec.optional(),
  /**
   * Whether NVML can register health events on this GPU (`unsupported`: `nvmlDeviceGetSupportedEventTypes`
   * answers NOT_SUPPORTED, as on GPUs and vGPUs that do not report XIDs). Default: supported.
   */
  nvmlEvents: z.enum(['supported', 'unsupported']).optional(),
};

export const GpuEntry = strict({
  model: nonEmpty,
  count: z.number().int().min(1).max(64).optional(),
  ...gpuPlacement,
});
export type GpuEntry = z.infer<typeof GpuEntry>;

/** How many GPUs the entries list, before they are expanded into GPUs. */
export function gpuCount(entries: readonly GpuEntry[] | undefined): number {
  return (entries ?? []).reduce((n, e) => n + (e.count ?? 1), 0);
}

export const GpuOverride = strict({
  /** NVML index (position in PCI bus order) of the GPU to change. */
  index: z.number().int().min(0),
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
  /** Kernel interface name; absent for RDMA-only functions (EFA, InfiniBand VFs) that have no netdev. */
  ifName: ifName.optional(),
  busId: nonEmpty,
  /** `null` where sysfs shows no root complex (Hyper-V vPCI). */
  pcieRoot: nonEmpty.nullable().optional(),
  numaNode: z.number().int().min(-1).optional(),
  /** A key of the NIC catalog, e.g. `ConnectX-7`, `EFA`, `ENA`. */
  model: nonEmpty,
  /** The RDMA device's name (`mlx5_0`, `rdmap16s27`); defaults to `mlx5_<n>` or EFA's `rdmap<bus>s<slot>`. */
  rdmaDevice: rdmaDevice.optional(),
  /** Defaults to a locally administered address derived from node and bus ID. */
  mac: z
    .string()
    .regex(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/, 'must be six lower-case hex pairs, e.g. "0e:96:fe:e8:a3:f5"')
    .optional(),
  mtu: z.number().int().min(68).max(65535).optional(),
  /** Address with prefix length, e.g. `192.168.155.224/19`, published as DRANET does. */
  ipv4: z
    .string()
    .regex(
      IPV4_CIDR,
      'must be an IPv4 address with prefix: four numbers from 0 to 255 and a prefix length from 0 to 32, e.g. "10.0.0.5/24"',
    )
    .optional(),
  /** Carries the node's default route: DRANET leaves it out of its slices. */
  primary: z.boolean().optional(),
  speedGbps: z.number().int().positive().optional(),
});
export type NicEntry = z.infer<typeof NicEntry>;

export const DriverSpec = strict({
  /** `nvidia-smi` driver version, e.g. `580.126.20`. */
  version: nonEmpty.optional(),
  /** CUDA driver API version the driver reports, e.g. `13.0`. */
  cudaVersion: nonEmpty.optional(),
});

/**
 * The machine's place in a multi-node NVLink fabric, for GPUs that have one: NVL72 racks give every
 * GPU of a rack (one NVLink partition) the same cluster UUID and clique. Unset: derived from the rack.
 */
export const FabricSpec = strict({
  /** Names the rack (NVLink domain) the node is in; nodes of one rack share a clique. Default: the node. */
  rack: nonEmpty.optional(),
  clusterUuid: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'must be a lower-case UUID')
    .optional(),
  /** NVML's `cliqueId`: the NVLink partition within the cluster. */
  cliqueId: z.number().int().min(0).max(0xffffffff).optional(),
});
export type FabricSpec = z.infer<typeof FabricSpec>;

/** 2^63 - 1 bytes, in whole MiB. */
const MAX_MEMORY_MIB = 2 ** 43 - 1;

/**
 * A GPU the catalog does not have, with the facts nvidia-smi shows (`capture node` writes one for a
 * product it does not know). No MIG: a MIG table cannot be read from nvidia-smi -q -x.
 */
export const CustomModel = strict({
  /** What `gpus[].model` names it by. */
  key: nonEmpty,
  /** `nvmlDeviceGetName`, e.g. `NVIDIA H20`: the devices' `productName`, a string attribute. */
  name: nonEmpty.refine(
    (s) => Buffer.byteLength(s) <= LIMITS.stringAttributeBytes,
    `must be at most ${LIMITS.stringAttributeBytes} bytes: it is published as the productName attribute, and the API server refuses longer string attributes`,
  ),
  architecture: z.enum(['Turing', 'Ampere', 'Ada Lovelace', 'Hopper', 'Blackwell']),
  /** CUDA compute capability, e.g. `9.0`. */
  computeCapability: z.string().regex(/^\d+\.\d+$/, 'must be <major>.<minor>, e.g. "9.0"'),
  /** Published as the `memory` capacity in bytes, a quantity the API server keeps as a signed 64-bit integer. */
  memoryMiB: z
    .number()
    .int()
    .positive()
    .max(MAX_MEMORY_MIB, {
      error: `must be at most ${MAX_MEMORY_MIB} (2^43 - 1): the memory capacity in bytes must fit a signed 64-bit integer`,
    }),
  /** PCI device ID in hex, e.g. `2329`. */
  pciDeviceId: z.string().regex(/^(0x)?[0-9a-fA-F]{4}$/, 'must be 4 hex digits, e.g. "2329"'),
  pciSubsystemId: z
    .string()
    .regex(/^(0x)?[0-9a-fA-F]{4}$/, 'must be 4 hex digits, e.g. "1996"')
    .optional(),
  multiprocessors: z.number().int().positive().optional(),
  powerLimitW: z.number().positive().optional(),
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
  preset: nonEmpty.optional(),
  /** GPUs the catalog does not have, for `gpus[].model` to name. */
  models: atMost(CustomModel, MAX_GPUS, 'one per GPU of a node at most').optional(),
  description: z.string().optional(),
  driver: DriverSpec.optional(),
  addressingMode: z.enum(ADDRESSING_MODES).optional(),
  /** Replaces the preset's GPUs when given. */
  gpus: atMost(GpuEntry, MAX_GPUS, `as a node has at most ${MAX_GPUS} GPUs`).min(1).optional(),
  /** Default MIG settings for every GPU that does not set its own. */
  mig: MigSpec.optional(),
  overrides: atMost(GpuOverride, MAX_GPUS, 'one per GPU of a node at most')
    .superRefine(uniqueIndexes)
    .optional(),
  /** Replaces the preset's NICs when given. */
  nics: z.array(NicEntry).optional(),
  fabric: FabricSpec.optional(),
});
export type ProfileSpec = z.infer<typeof ProfileSpec>;
