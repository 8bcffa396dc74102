import type { GpuModel } from '../catalog/types.js';

/**
 * What NVIDIA Fabric Manager knows of a node: each GPU's module ID on its baseboard (NVML's
 * `nvmlDeviceGetModuleId`, which FM calls the GPU's physical ID) and, on a node with an NVSwitch fabric,
 * the partitions `fmGetSupportedFabricPartitions` lists. NVIDIA's driver hard-codes no table: it reads
 * FM's (NVIDIA v0.5.0 pkg/fabricmanager/manager.go), so the table here is what FM would answer.
 */

/** One row of `fmGetSupportedFabricPartitions`: a partition ID and its GPUs' module IDs. */
export interface FmPartition {
  id: number;
  moduleIds: readonly number[];
}

/**
 * Module ID by bus order, as NVML reports them on real nodes. Module IDs follow the baseboard's own
 * numbering, not PCI order, so a capture's order is kept rather than 1..N.
 */
const CAPTURED_MODULE_IDS: readonly { models: readonly string[]; ids: readonly number[] }[] = [
  // test/fixtures/nvidia-smi/k8s-test-infra-h100.xml (an 8-GPU HGX H100 node, driver 580): <module_id>
  // by minor 0-7; assumed for every 8-GPU H100/H200 board, whose PCIe layout nobody published.
  { models: ['H100-SXM5-80GB', 'H200'], ids: [7, 5, 6, 8, 1, 3, 4, 2] },
  // k8s-test-infra-gb200.xml and -gb300.xml: both 4-GPU compute trays show 2, 1, 4, 3 in bus order.
  { models: ['GB200', 'GB300'], ids: [2, 1, 4, 3] },
];

/** SXM parts that sit on an 8-GPU HGX baseboard with NVSwitches (NVLink5 switch-managed on B200). */
const HGX_8GPU_MODELS: ReadonlySet<string> = new Set([
  'A100-SXM4-40GB',
  'A100-SXM4-80GB',
  'H100-SXM5-80GB',
  'H200',
  'B200',
]);

/**
 * NVML's module ID of the GPU at `index` (bus order) of a node with `count` GPUs of `model`. A PCIe card
 * reports 1 (k8s-test-infra-l40s.xml and -t4.xml); other SXM boards are assumed numbered in bus order.
 */
export function moduleIdOf(model: GpuModel, index: number, count: number): number {
  const captured = CAPTURED_MODULE_IDS.find((c) => c.models.includes(model.key) && c.ids.length === count);
  if (captured) return captured.ids[index] ?? index + 1;
  return HGX_8GPU_MODELS.has(model.key) && count === 8 ? index + 1 : 1;
}

/**
 * The FM user guide's default "Shared NVSwitch" partitions of an 8-GPU HGX board: one of eight, two of
 * four, four of two, eight of one. ASSUMED: the guide's table could not be read (only its first pages are
 * in any source found); this is the H100 table as remembered, used for A100 and B200 boards too. The
 * guide's v1.3 changed the H100 two-GPU pairs once, so those are the least sure.
 */
export const HGX_8GPU_PARTITIONS: readonly FmPartition[] = [
  { id: 0, moduleIds: [1, 2, 3, 4, 5, 6, 7, 8] },
  { id: 1, moduleIds: [1, 2, 3, 4] },
  { id: 2, moduleIds: [5, 6, 7, 8] },
  { id: 3, moduleIds: [1, 3] },
  { id: 4, moduleIds: [2, 4] },
  { id: 5, moduleIds: [5, 7] },
  { id: 6, moduleIds: [6, 8] },
  ...[1, 2, 3, 4, 5, 6, 7, 8].map((m) => ({ id: 6 + m, moduleIds: [m] })),
];

/**
 * FM's partitions where NVIDIA's driver would open FM, else null. NVIDIA v0.5.0
 * pkg/fabricmanager/fabric.go looks for `/proc/driver/nvidia-nvswitch/devices/*` or an InfiniBand VPD
 * marked `SW_MNG` (NVLink5 switch-managed, HGX B200): both exist only on an 8-GPU HGX baseboard. An
 * NVL72 compute tray (GB200, GB300) has neither: its NVLink switches sit in other trays, run by NMX.
 */
export function fabricManagerPartitions(models: readonly GpuModel[]): readonly FmPartition[] | null {
  const first = models[0];
  if (models.length !== 8 || !first || !models.every((m) => m.key === first.key)) return null;
  return HGX_8GPU_MODELS.has(first.key) ? HGX_8GPU_PARTITIONS : null;
}
