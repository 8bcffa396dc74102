/**
 * The series dcgm-exporter serves by default (its `default-counters.csv` of 4.8.x, before 4.9.0 renamed
 * fields and units): the name is the DCGM field's, the type as the exporter declares it, the unit as DCGM
 * reports it. Help texts are ours. `kind` is how DCGM stores the value, which decides how the exporter
 * prints it: integers as they are, doubles with six decimals.
 */

export type FieldName =
  | 'DCGM_FI_DEV_SM_CLOCK'
  | 'DCGM_FI_DEV_MEM_CLOCK'
  | 'DCGM_FI_DEV_MEMORY_TEMP'
  | 'DCGM_FI_DEV_GPU_TEMP'
  | 'DCGM_FI_DEV_POWER_USAGE'
  | 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'
  | 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER'
  | 'DCGM_FI_DEV_GPU_UTIL'
  | 'DCGM_FI_DEV_MEM_COPY_UTIL'
  | 'DCGM_FI_DEV_ENC_UTIL'
  | 'DCGM_FI_DEV_DEC_UTIL'
  | 'DCGM_FI_DEV_XID_ERRORS'
  | 'DCGM_FI_DEV_FB_FREE'
  | 'DCGM_FI_DEV_FB_USED'
  | 'DCGM_FI_DEV_FB_RESERVED'
  | 'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL'
  | 'DCGM_FI_DEV_VGPU_LICENSE_STATUS'
  | 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS'
  | 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS'
  | 'DCGM_FI_DEV_ROW_REMAP_FAILURE'
  | 'DCGM_FI_PROF_GR_ENGINE_ACTIVE'
  | 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE'
  | 'DCGM_FI_PROF_DRAM_ACTIVE'
  | 'DCGM_FI_PROF_PCIE_TX_BYTES'
  | 'DCGM_FI_PROF_PCIE_RX_BYTES';

export interface Field {
  name: FieldName;
  type: 'gauge' | 'counter';
  kind: 'int' | 'double';
  help: string;
  /**
   * What a MIG instance's row carries: its own value, its GPU's (a board-level reading DCGM reports for
   * every instance of the board), or nothing (DCGM has no per-instance value: the utilisation fields).
   */
  onInstance: 'own' | 'gpu' | 'none';
}

const f = (
  name: FieldName,
  type: Field['type'],
  kind: Field['kind'],
  onInstance: Field['onInstance'],
  help: string,
): Field => ({ name, type, kind, onInstance, help });

/** In the order dcgm-exporter serves them. */
export const FIELDS: readonly Field[] = [
  f('DCGM_FI_DEV_SM_CLOCK', 'gauge', 'int', 'gpu', 'SM clock (MHz).'),
  f('DCGM_FI_DEV_MEM_CLOCK', 'gauge', 'int', 'gpu', 'Memory clock (MHz).'),
  f('DCGM_FI_DEV_MEMORY_TEMP', 'gauge', 'int', 'gpu', 'Memory temperature (C).'),
  f('DCGM_FI_DEV_GPU_TEMP', 'gauge', 'int', 'gpu', 'GPU temperature (C).'),
  f('DCGM_FI_DEV_POWER_USAGE', 'gauge', 'double', 'gpu', 'Power draw (W).'),
  f(
    'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION',
    'counter',
    'int',
    'gpu',
    'Energy used since the driver loaded (mJ).',
  ),
  f('DCGM_FI_DEV_PCIE_REPLAY_COUNTER', 'counter', 'int', 'gpu', 'PCIe retries.'),
  f('DCGM_FI_DEV_GPU_UTIL', 'gauge', 'int', 'none', 'GPU utilization (%).'),
  f('DCGM_FI_DEV_MEM_COPY_UTIL', 'gauge', 'int', 'none', 'Memory utilization (%).'),
  f('DCGM_FI_DEV_ENC_UTIL', 'gauge', 'int', 'none', 'Encoder utilization (%).'),
  f('DCGM_FI_DEV_DEC_UTIL', 'gauge', 'int', 'none', 'Decoder utilization (%).'),
  f('DCGM_FI_DEV_XID_ERRORS', 'gauge', 'int', 'own', 'The last XID error seen (0: none).'),
  f('DCGM_FI_DEV_FB_FREE', 'gauge', 'int', 'own', 'Framebuffer memory free (MiB).'),
  f('DCGM_FI_DEV_FB_USED', 'gauge', 'int', 'own', 'Framebuffer memory used (MiB).'),
  f('DCGM_FI_DEV_FB_RESERVED', 'gauge', 'int', 'own', 'Framebuffer memory reserved (MiB).'),
  f(
    'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL',
    'gauge',
    'int',
    'gpu',
    'NVLink bandwidth counter summed over all lanes.',
  ),
  f('DCGM_FI_DEV_VGPU_LICENSE_STATUS', 'gauge', 'int', 'gpu', 'vGPU license status.'),
  f(
    'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS',
    'counter',
    'int',
    'gpu',
    'Rows remapped for uncorrectable errors.',
  ),
  f(
    'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
    'counter',
    'int',
    'gpu',
    'Rows remapped for correctable errors.',
  ),
  f('DCGM_FI_DEV_ROW_REMAP_FAILURE', 'gauge', 'int', 'gpu', '1 when a row could not be remapped.'),
  f(
    'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
    'gauge',
    'double',
    'own',
    'Share of time the graphics or compute engines were active (0-1).',
  ),
  f(
    'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE',
    'gauge',
    'double',
    'own',
    'Share of cycles the tensor pipes were active (0-1).',
  ),
  f(
    'DCGM_FI_PROF_DRAM_ACTIVE',
    'gauge',
    'double',
    'own',
    'Share of cycles the memory interface was sending or receiving (0-1).',
  ),
  f('DCGM_FI_PROF_PCIE_TX_BYTES', 'gauge', 'double', 'gpu', 'PCIe bytes sent per second.'),
  f('DCGM_FI_PROF_PCIE_RX_BYTES', 'gauge', 'double', 'gpu', 'PCIe bytes received per second.'),
];

/** The label dcgm-exporter adds to every series from a `label` row of its counters file. */
export const DRIVER_VERSION_LABEL = 'DCGM_FI_DRIVER_VERSION';
