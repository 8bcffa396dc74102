import { telemetryOf } from '../catalog/telemetry.js';
import type { NvmlFault } from '../nvml/state.js';
import type { FieldName } from './fields.js';
import { memorySlices, type GpuEntity, type InstanceEntity } from './entities.js';

/**
 * What each field reads for a GPU or a MIG instance at a load, by a model users can predict: utilisation
 * drives clocks, power and temperature between the model's idle and busy figures; memory used is the
 * share the load says of what NVML reports as total, less what the driver reserves. Pure: the same
 * inputs give the same values; only the energy counter, an integral over time, is the caller's.
 */

export type Values = Partial<Record<FieldName, number>>;

/** A GPU's health as DCGM reads it, from the faults injected into mock NVML. */
export interface Health {
  lost: boolean;
  /** The last XID reported, 0 for none: dcgm-exporter keeps the last one until it restarts. */
  lastXid: number;
  correctable: number;
  uncorrectable: number;
}

export const HEALTHY: Health = { lost: false, lastXid: 0, correctable: 0, uncorrectable: 0 };

export function healthOf(faults: readonly NvmlFault[]): Health {
  let lastXid = 0;
  let correctable = 0;
  let uncorrectable = 0;
  let lost = false;
  for (const f of faults) {
    if (f.kind === 'xid') lastXid = f.xid;
    else if (f.kind === 'ecc') {
      if (f.bits === 1) correctable += f.count;
      else uncorrectable += f.count;
    } else if (f.kind === 'lost') {
      lost = true;
      // NVIDIA's driver reports a GPU that fell off the bus as XID 79.
      lastXid = 79;
    }
  }
  return { lost, lastXid, correctable, uncorrectable };
}

/** Load in percent (0-100): utilisation and the share of memory in use. */
export interface Reading {
  util: number;
  memory: number;
}

const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

/** Board power at a utilisation: a tenth of the cap at rest, 85% of it flat out. */
export function powerW(g: GpuEntity, util: number): number {
  const cap = g.model.powerLimitW;
  return cap * (0.1 + (0.75 * clamp(util, 0, 100)) / 100);
}

/** Rows the row remapper can still take before it fails, per bank; what DCGM reports past it is a guess. */
const REMAP_CAPACITY = 512;

/** A whole GPU's fields (MIG off), or the board-level ones of a GPU in MIG mode. */
export function gpuValues(g: GpuEntity, r: Reading, health: Health, energyMj: number): Values {
  if (health.lost) return { DCGM_FI_DEV_XID_ERRORS: health.lastXid };
  const t = telemetryOf(g.model);
  const util = clamp(r.util, 0, 100);
  const busy = util / 100;
  const reserved = t.reservedMiB;
  const used = Math.round(((g.model.memoryMiB - reserved) * clamp(r.memory, 0, 100)) / 100);
  const temp = Math.round(t.idleTempC + (t.busyTempC - t.idleTempC) * busy);
  const v: Values = {
    // Any work lifts the SM clock to its boost clock; HBM and GDDR run at theirs whatever the load.
    DCGM_FI_DEV_SM_CLOCK: util > 0 ? t.smMaxMHz : t.smIdleMHz,
    DCGM_FI_DEV_MEM_CLOCK: t.memMHz,
    DCGM_FI_DEV_GPU_TEMP: temp,
    DCGM_FI_DEV_POWER_USAGE: Math.round(powerW(g, util) * 1000) / 1000,
    DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION: Math.floor(energyMj),
    DCGM_FI_DEV_PCIE_REPLAY_COUNTER: 0,
    DCGM_FI_DEV_GPU_UTIL: Math.round(util),
    DCGM_FI_DEV_MEM_COPY_UTIL: Math.round(util * 0.6),
    DCGM_FI_DEV_ENC_UTIL: 0,
    DCGM_FI_DEV_DEC_UTIL: 0,
    DCGM_FI_DEV_XID_ERRORS: health.lastXid,
    DCGM_FI_DEV_FB_FREE: g.model.memoryMiB - reserved - used,
    DCGM_FI_DEV_FB_USED: used,
    DCGM_FI_DEV_FB_RESERVED: reserved,
    DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: 0,
    DCGM_FI_DEV_VGPU_LICENSE_STATUS: 0,
    DCGM_FI_PROF_GR_ENGINE_ACTIVE: busy,
    DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: busy * 0.4,
    DCGM_FI_PROF_DRAM_ACTIVE: busy * 0.6,
    DCGM_FI_PROF_PCIE_TX_BYTES: 2e4 + busy * 5e8,
    DCGM_FI_PROF_PCIE_RX_BYTES: 2e4 + busy * 1.5e9,
  };
  // HBM has a temperature sensor of its own; GDDR boards report none, and DCGM leaves the field blank.
  if (t.memory === 'HBM') v.DCGM_FI_DEV_MEMORY_TEMP = temp + 3;
  // Row remapping replaced page retirement from Ampere on; older GPUs have no remapper to report.
  if (t.rowRemapping) {
    v.DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS = Math.min(health.uncorrectable, REMAP_CAPACITY);
    v.DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS = Math.min(health.correctable, REMAP_CAPACITY);
    v.DCGM_FI_DEV_ROW_REMAP_FAILURE = health.uncorrectable + health.correctable > REMAP_CAPACITY ? 1 : 0;
  }
  return v;
}

/** A MIG instance's own fields: its share of the engines and its own memory. */
export function instanceValues(i: InstanceEntity, r: Reading, health: Health): Values {
  if (health.lost) return { DCGM_FI_DEV_XID_ERRORS: health.lastXid };
  const busy = clamp(r.util, 0, 100) / 100;
  const total = i.profile.memoryMiB;
  // The driver's reserve is the board's; an instance's memory is what its profile gives.
  const used = Math.round((total * clamp(r.memory, 0, 100)) / 100);
  return {
    DCGM_FI_DEV_XID_ERRORS: health.lastXid,
    DCGM_FI_DEV_FB_FREE: total - used,
    DCGM_FI_DEV_FB_USED: used,
    DCGM_FI_DEV_FB_RESERVED: 0,
    DCGM_FI_PROF_GR_ENGINE_ACTIVE: busy,
    DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: busy * 0.4,
    DCGM_FI_PROF_DRAM_ACTIVE: busy * 0.6,
  };
}

/**
 * A GPU in MIG mode works as hard as its instances together: each weighs by the memory slices it
 * spans, the share of the board it has.
 */
export function boardUtil(g: GpuEntity, utilByInstance: ReadonlyMap<number, number>): number {
  const slices = memorySlices(g.model);
  let u = 0;
  for (const i of g.instances ?? [])
    u += ((utilByInstance.get(i.id) ?? 0) * i.profile.placementSize) / slices;
  return clamp(u, 0, 100);
}
