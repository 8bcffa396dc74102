import type { GpuModel, Source } from './types.js';

/**
 * What a GPU model reads on its sensors and clocks, for the metrics DCGM serves: the range its SM clock
 * moves in, its memory clock, the memory kind (HBM has a temperature sensor, GDDR none in DCGM), the
 * framebuffer the driver keeps for itself, and the temperatures of a board at rest and flat out in an
 * air-cooled server. Separate from `GpuModel` because none of it shapes a ResourceSlice.
 */
export interface Telemetry {
  smIdleMHz: number;
  /** `clocks.max.sm`. */
  smMaxMHz: number;
  /** `clocks.max.memory`; memory runs at it under any load. */
  memMHz: number;
  memory: 'HBM' | 'GDDR';
  /** `FB Memory Usage: Reserved`, MiB. */
  reservedMiB: number;
  idleTempC: number;
  busyTempC: number;
  /** Ampere and later remap rows; older GPUs retire pages. */
  rowRemapping: boolean;
  source: Source;
}

const seen = (note: string): Source => ({ ref: 'T1', confirmed: true, note });
const secondary = (note: string): Source => ({ ref: 'T2', confirmed: false, note });
const inferred = (note: string): Source => ({ ref: 'FAKEGPU', confirmed: false, note });

/** smIdleMHz, smMaxMHz, memMHz, memory, reservedMiB, source. */
type Row = [number, number, number, Telemetry['memory'], number, Source];

/**
 * Reserved framebuffer where no output shows it: an H100's 81,559 MiB less the 81,071 MiB an idle one
 * reports free (T1) is 488 MiB; the other HBM boards are given the same, GDDR boards L4's.
 */
const HBM_RESERVE = 488;
const GDDR_RESERVE = 470;

const TABLE: Readonly<Record<string, Row>> = {
  'A100-SXM4-40GB': [210, 1410, 1215, 'HBM', HBM_RESERVE, seen('max clocks')],
  'A100-SXM4-80GB': [210, 1410, 1593, 'HBM', HBM_RESERVE, seen('max clocks')],
  'A100-PCIE-40GB': [210, 1410, 1215, 'HBM', HBM_RESERVE, inferred('clocks of the SXM4 40GB')],
  'A100-PCIE-80GB': [210, 1410, 1512, 'HBM', HBM_RESERVE, seen('max clocks')],
  A30: [
    210,
    1440,
    1215,
    'HBM',
    HBM_RESERVE,
    secondary('max clocks; 1440 MHz also on MIG rows of dcgm-exporter 317'),
  ],
  A10: [210, 1695, 6251, 'GDDR', GDDR_RESERVE, inferred('spec-sheet boost clock')],
  A10G: [210, 1710, 6251, 'GDDR', GDDR_RESERVE, inferred('spec-sheet boost clock')],
  T4: [300, 1590, 5001, 'GDDR', 447, seen('max clocks, FB reserved')],
  L4: [210, 2040, 6251, 'GDDR', 470, seen('max clocks, FB reserved')],
  L40S: [210, 2520, 9001, 'GDDR', 608, seen('max clocks, FB reserved')],
  'H100-SXM5-80GB': [345, 1980, 2619, 'HBM', HBM_RESERVE, seen('idle and max clocks, idle 66-70 W, 26-29 C')],
  'H100-PCIE': [345, 1755, 1593, 'HBM', HBM_RESERVE, inferred('spec-sheet boost clock')],
  'H100-NVL': [345, 1785, 2619, 'HBM', HBM_RESERVE, inferred('spec-sheet boost clock')],
  H200: [345, 1980, 3201, 'HBM', HBM_RESERVE, secondary('max clocks')],
  GH200: [345, 1980, 2619, 'HBM', HBM_RESERVE, inferred('clocks of the H100 SXM')],
  B200: [345, 1965, 3996, 'HBM', HBM_RESERVE, secondary('max clocks')],
  GB200: [345, 2062, 3996, 'HBM', HBM_RESERVE, secondary('max clocks')],
  B300: [345, 2032, 3996, 'HBM', HBM_RESERVE, secondary('max clocks')],
  GB300: [345, 2032, 3996, 'HBM', HBM_RESERVE, secondary('max clocks of the B300')],
  'RTX-PRO-6000-BSE': [
    180,
    3090,
    14001,
    'GDDR',
    GDDR_RESERVE,
    inferred('clocks of the Workstation Edition (T1)'),
  ],
};

/** A model's telemetry; a model the table lacks gets Ampere-class figures, marked as inferred. */
export function telemetryOf(model: GpuModel): Telemetry {
  const [smIdleMHz, smMaxMHz, memMHz, memory, reservedMiB, source] = TABLE[model.key] ?? [
    210,
    1410,
    1215,
    'HBM',
    HBM_RESERVE,
    inferred('no figures for this model; Ampere-class defaults'),
  ];
  return {
    smIdleMHz,
    smMaxMHz,
    memMHz,
    memory,
    reservedMiB,
    // A rack-mounted board at rest and flat out (T1: an idle H100 at 26-29 C).
    idleTempC: 28,
    busyTempC: 72,
    rowRemapping: model.architecture !== 'Turing',
    source,
  };
}

/** The models the table covers, for the test that holds it to the catalog. */
export const TELEMETRY_MODELS: readonly string[] = Object.keys(TABLE);
