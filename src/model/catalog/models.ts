import type { GiProfile, GiProfileEnumName, GpuFact, GpuModel, MigCapability, Source } from './types.js';

const seen = (ref: string, note?: string): Source =>
  note ? { ref, confirmed: true, note } : { ref, confirmed: true };
const inferred = (ref: string, note: string): Source => ({ ref, confirmed: false, note });

/** Provenance for every fact of a model: one default, with exceptions named. */
function facts(base: Source, exceptions: Partial<Record<GpuFact, Source>> = {}): Record<GpuFact, Source> {
  const keys: GpuFact[] = [
    'name',
    'brand',
    'architecture',
    'computeCapability',
    'memoryMiB',
    'pciDeviceId',
    'pciSubsystemId',
    'multiprocessors',
    'powerLimitW',
  ];
  return Object.fromEntries(keys.map((k) => [k, exceptions[k] ?? base])) as Record<GpuFact, Source>;
}

/** Engines in `-lgip` column order after the SM count: DEC, ENC, CE, JPEG, OFA. */
type Engines = readonly [sm: number, dec: number, enc: number, ce: number, jpeg: number, ofa: number];

function gi(
  name: string,
  id: number,
  enumName: GiProfileEnumName,
  instances: number,
  memoryMiB: number,
  [multiprocessors, decoders, encoders, copyEngines, jpegEngines, ofaEngines]: Engines,
  placements: readonly number[],
  placementSize: number,
  source: Source,
): GiProfile {
  return {
    name,
    id,
    enumName,
    instances,
    memoryMiB,
    multiprocessors,
    decoders,
    encoders,
    copyEngines,
    jpegEngines,
    ofaEngines,
    placements,
    placementSize,
    source,
  };
}

// Placements of 8-memory-slice parts (GA100, GH100, GB100/GB110 classes), from `-lgipp`.
const P8 = {
  one: [0, 1, 2, 3, 4, 5, 6],
  oneRev2: [0, 2, 4, 6],
  two: [0, 2, 4],
  three: [0, 4],
  four: [0],
  seven: [0],
} as const;

/**
 * The 7-profile table every 8-slice part shares (ids 19/20/15/14/9/5/0); only names, memory and engines
 * differ between models.
 */
function eightSliceTable(
  rows: {
    one: [string, number, Engines];
    oneMe: [string, number, Engines];
    oneRev2: [string, number, Engines] | null;
    two: [string, number, Engines];
    three: [string, number, Engines];
    four: [string, number, Engines];
    seven: [string, number, Engines];
  },
  source: Source,
  rowSources: Partial<Record<keyof typeof rows, Source>> = {},
): MigCapability {
  const s = (k: keyof typeof rows): Source => rowSources[k] ?? source;
  const profiles: GiProfile[] = [
    gi(rows.one[0], 19, '1_SLICE', 7, rows.one[1], rows.one[2], P8.one, 1, s('one')),
    gi(rows.oneMe[0], 20, '1_SLICE_REV1', 1, rows.oneMe[1], rows.oneMe[2], P8.one, 1, s('oneMe')),
  ];
  if (rows.oneRev2) {
    const [n, m, e] = rows.oneRev2;
    profiles.push(gi(n, 15, '1_SLICE_REV2', 4, m, e, P8.oneRev2, 2, s('oneRev2')));
  }
  profiles.push(
    gi(rows.two[0], 14, '2_SLICE', 3, rows.two[1], rows.two[2], P8.two, 2, s('two')),
    gi(rows.three[0], 9, '3_SLICE', 2, rows.three[1], rows.three[2], P8.three, 4, s('three')),
    gi(rows.four[0], 5, '4_SLICE', 1, rows.four[1], rows.four[2], P8.four, 4, s('four')),
    gi(rows.seven[0], 0, '7_SLICE', 1, rows.seven[1], rows.seven[2], P8.seven, 8, s('seven')),
  );
  return { memorySlices: 8, profiles };
}

const a100_40 = eightSliceTable(
  {
    one: ['1g.5gb', 4864, [14, 0, 0, 1, 0, 0]],
    oneMe: ['1g.5gb+me', 4864, [14, 1, 0, 1, 1, 1]],
    oneRev2: ['1g.10gb', 9984, [14, 1, 0, 1, 0, 0]],
    two: ['2g.10gb', 9984, [28, 1, 0, 2, 0, 0]],
    three: ['3g.20gb', 20096, [42, 2, 0, 3, 0, 0]],
    four: ['4g.20gb', 20096, [56, 2, 0, 4, 0, 0]],
    seven: ['7g.40gb', 40448, [98, 5, 0, 7, 1, 1]],
  },
  seen('S15, S6', 'newer-driver lgip of an A100-PCIE-40GB; placements from the MIG guide -lgipp'),
);

const a100_80 = eightSliceTable(
  {
    one: ['1g.10gb', 9728, [14, 0, 0, 1, 0, 0]],
    oneMe: ['1g.10gb+me', 9728, [14, 1, 0, 1, 1, 1]],
    oneRev2: ['1g.20gb', 19968, [14, 1, 0, 1, 0, 0]],
    two: ['2g.20gb', 19968, [28, 1, 0, 2, 0, 0]],
    three: ['3g.40gb', 40192, [42, 2, 0, 3, 0, 0]],
    four: ['4g.40gb', 40192, [56, 2, 0, 4, 0, 0]],
    seven: ['7g.80gb', 80896, [98, 5, 0, 7, 1, 1]],
  },
  seen('S51', 'lgip; placements assumed equal to A100-40GB'),
  {
    oneRev2: inferred(
      'S52',
      'profile listed by mig-parted for 0x20B2/0x20B5; memory and engines assumed as 2g.20gb',
    ),
  },
);

const h100 = eightSliceTable(
  {
    one: ['1g.10gb', 9984, [16, 1, 0, 1, 1, 0]],
    oneMe: ['1g.10gb+me', 9984, [16, 1, 0, 1, 1, 1]],
    oneRev2: ['1g.20gb', 20096, [26, 1, 0, 1, 1, 0]],
    two: ['2g.20gb', 20096, [32, 2, 0, 2, 2, 0]],
    three: ['3g.40gb', 40448, [60, 3, 0, 3, 3, 0]],
    four: ['4g.40gb', 40448, [64, 4, 0, 4, 4, 0]],
    seven: ['7g.80gb', 81152, [132, 7, 0, 8, 7, 1]],
  },
  seen('S27, S6', 'H100 80GB HBM3 lgip and lgipp'),
);

const h100Pcie = eightSliceTable(
  {
    one: ['1g.10gb', 9984, [16, 1, 0, 1, 1, 0]],
    oneMe: ['1g.10gb+me', 9984, [16, 1, 0, 1, 1, 1]],
    oneRev2: ['1g.20gb', 20096, [16, 1, 0, 1, 1, 0]],
    two: ['2g.20gb', 20096, [32, 2, 0, 2, 2, 0]],
    three: ['3g.40gb', 40448, [48, 3, 0, 3, 3, 0]],
    four: ['4g.40gb', 40448, [64, 4, 0, 4, 4, 0]],
    seven: ['7g.80gb', 81152, [114, 7, 0, 8, 7, 1]],
  },
  inferred(
    'S6, FAKEGPU',
    'no H100 PCIe lgip found; memory as H100 SXM, SM counts chosen so every layout fits 114 SMs',
  ),
);

const h100Nvl = eightSliceTable(
  {
    one: ['1g.12gb', 10880, [16, 1, 0, 1, 1, 0]],
    oneMe: ['1g.12gb+me', 10880, [16, 1, 0, 1, 1, 1]],
    oneRev2: ['1g.24gb', 22016, [26, 1, 0, 1, 1, 0]],
    two: ['2g.24gb', 22016, [32, 2, 0, 2, 2, 0]],
    three: ['3g.47gb', 47232, [60, 3, 0, 3, 3, 0]],
    four: ['4g.47gb', 47232, [64, 4, 0, 4, 4, 0]],
    seven: ['7g.94gb', 94848, [132, 7, 0, 8, 7, 1]],
  },
  seen('S15', 'lgip of one driver drop; placements assumed as H100'),
);

const h200 = eightSliceTable(
  {
    one: ['1g.18gb', 16384, [16, 1, 0, 1, 1, 0]],
    oneMe: ['1g.18gb+me', 16384, [16, 1, 0, 1, 1, 1]],
    oneRev2: ['1g.35gb', 33024, [26, 1, 0, 1, 1, 0]],
    two: ['2g.35gb', 33024, [32, 2, 0, 2, 2, 0]],
    three: ['3g.71gb', 71168, [60, 3, 0, 3, 3, 0]],
    four: ['4g.71gb', 71168, [64, 4, 0, 4, 4, 0]],
    seven: ['7g.141gb', 143104, [132, 7, 0, 8, 7, 1]],
  },
  seen('S8', 'lgip of 8x H200 (Sept 2024); placements assumed as H100 until captured on an H200'),
);

const gh200 = eightSliceTable(
  {
    one: ['1g.12gb', 11264, [16, 1, 0, 1, 1, 0]],
    oneMe: ['1g.12gb+me', 11264, [16, 1, 0, 1, 1, 1]],
    oneRev2: ['1g.24gb', 23552, [26, 1, 0, 1, 1, 0]],
    two: ['2g.24gb', 23552, [32, 2, 0, 2, 2, 0]],
    three: ['3g.48gb', 47616, [60, 3, 0, 3, 3, 0]],
    four: ['4g.48gb', 47616, [64, 4, 0, 4, 4, 0]],
    seven: ['7g.96gb', 95232, [132, 7, 0, 8, 7, 1]],
  },
  seen('S35', 'GH200 96GB lgip; placements assumed as H100'),
);

const b200Guess = inferred(
  'S6, FAKEGPU',
  'no lgip row found; CE from the MIG guide, memory and SMs scaled from H100',
);
const b200 = eightSliceTable(
  {
    one: ['1g.23gb', 20992, [18, 1, 0, 2, 1, 0]],
    oneMe: ['1g.23gb+me', 20992, [18, 1, 0, 2, 1, 1]],
    oneRev2: ['1g.45gb', 45312, [30, 1, 0, 2, 1, 0]],
    two: ['2g.45gb', 45312, [36, 2, 0, 4, 2, 0]],
    three: ['3g.90gb', 90880, [54, 3, 0, 6, 3, 0]],
    four: ['4g.90gb', 90880, [72, 4, 0, 8, 4, 0]],
    seven: ['7g.180gb', 182400, [148, 7, 0, 16, 7, 1]],
  },
  seen('S58', 'lgip (Mar 2025 driver drop); placements assumed as H100'),
  { three: b200Guess, four: b200Guess, seven: b200Guess },
);

const gb200Guess = inferred(
  'S52, FAKEGPU',
  'names and counts from mig-parted; memory, SMs and engines scaled from H100',
);
const gb200 = eightSliceTable(
  {
    one: ['1g.23gb', 22528, [18, 1, 0, 2, 1, 0]],
    oneMe: ['1g.23gb+me', 22528, [18, 1, 0, 2, 1, 1]],
    oneRev2: ['1g.47gb', 46592, [32, 1, 0, 2, 1, 0]],
    two: ['2g.47gb', 46592, [38, 2, 0, 4, 2, 0]],
    three: ['3g.93gb', 93952, [56, 3, 0, 6, 3, 0]],
    four: ['4g.93gb', 93952, [76, 4, 0, 8, 4, 0]],
    seven: ['7g.186gb', 188480, [152, 7, 0, 16, 7, 1]],
  },
  seen('S49, S39', 'lgip (Aug 2025 production boards); placements assumed as H100'),
  { three: gb200Guess, four: gb200Guess, seven: gb200Guess },
);

const gb300Guess = inferred(
  'GB300, FAKEGPU',
  'names and ids from NVIDIA docs; no GB300 lgip found, so memory is scaled from GB200 by total memory and engines follow GB200',
);
const gb300 = eightSliceTable(
  {
    one: ['1g.35gb', 33792, [18, 1, 0, 2, 1, 0]],
    oneMe: ['1g.35gb+me', 33792, [18, 1, 0, 2, 1, 1]],
    oneRev2: ['1g.70gb', 69888, [32, 1, 0, 2, 1, 0]],
    two: ['2g.70gb', 69888, [38, 2, 0, 4, 2, 0]],
    three: ['3g.139gb', 140928, [56, 3, 0, 6, 3, 0]],
    four: ['4g.139gb', 140928, [76, 4, 0, 8, 4, 0]],
    seven: ['7g.278gb', 282752, [152, 7, 0, 16, 7, 1]],
  },
  gb300Guess,
);

const b300Guess = inferred(
  'B300MIG, FAKEGPU',
  'names and counts from mig-parted; ids as every Blackwell lgip; memory scaled from GB300 by total memory (the names match), engines as GB300',
);
const b300 = eightSliceTable(
  {
    one: ['1g.34gb', 32768, [18, 1, 0, 2, 1, 0]],
    oneMe: ['1g.34gb+me', 32768, [18, 1, 0, 2, 1, 1]],
    oneRev2: ['1g.67gb', 67584, [32, 1, 0, 2, 1, 0]],
    two: ['2g.67gb', 67584, [38, 2, 0, 4, 2, 0]],
    three: ['3g.135gb', 136448, [56, 3, 0, 6, 3, 0]],
    four: ['4g.135gb', 136448, [76, 4, 0, 8, 4, 0]],
    seven: ['7g.269gb', 273664, [148, 7, 0, 16, 7, 1]],
  },
  b300Guess,
);

const a30: MigCapability = {
  memorySlices: 4,
  profiles: [
    gi('1g.6gb', 14, '1_SLICE', 4, 5952, [14, 1, 0, 1, 0, 0], [0, 1, 2, 3], 1, seen('S17')),
    gi('1g.6gb+me', 21, '1_SLICE_REV1', 1, 5952, [14, 1, 0, 1, 1, 1], [0, 1, 2, 3], 1, seen('S17')),
    gi('2g.12gb', 5, '2_SLICE', 2, 11968, [28, 2, 0, 2, 0, 0], [0, 2], 2, seen('S17')),
    gi('2g.12gb+me', 6, '2_SLICE_REV1', 1, 11968, [28, 2, 0, 2, 1, 1], [0, 2], 2, seen('S17')),
    gi('4g.24gb', 0, '4_SLICE', 1, 24064, [56, 4, 0, 4, 1, 1], [0], 4, seen('S17')),
  ],
};

const rtxProSeen = seen('S40', 'lgip, driver 580.105.06; placements assumed by analogy with A30');
const rtxProGuess = inferred(
  'S6, FAKEGPU',
  '4g rows: engines from the MIG guide, memory and SMs derived from the total',
);
const rtxPro: MigCapability = {
  memorySlices: 4,
  profiles: [
    gi('1g.24gb', 14, '1_SLICE', 4, 23680, [46, 1, 1, 1, 1, 0], [0, 1, 2, 3], 1, rtxProSeen),
    gi('1g.24gb+me', 21, '1_SLICE_REV1', 1, 23680, [46, 1, 1, 1, 1, 1], [0, 1, 2, 3], 1, rtxProSeen),
    gi('1g.24gb+gfx', 47, '1_SLICE_GFX', 4, 23680, [46, 1, 1, 1, 1, 0], [0, 1, 2, 3], 1, rtxProSeen),
    gi('1g.24gb+me.all', 65, '1_SLICE_ALL_ME', 1, 23680, [46, 4, 4, 1, 4, 1], [0, 1, 2, 3], 1, rtxProSeen),
    gi('1g.24gb-me', 67, '1_SLICE_NO_ME', 4, 23680, [46, 0, 0, 1, 0, 0], [0, 1, 2, 3], 1, rtxProSeen),
    gi('2g.48gb', 5, '2_SLICE', 2, 47616, [94, 2, 2, 2, 2, 0], [0, 2], 2, rtxProSeen),
    gi('2g.48gb+gfx', 35, '2_SLICE_GFX', 2, 47616, [94, 2, 2, 2, 2, 0], [0, 2], 2, rtxProSeen),
    gi('2g.48gb+me.all', 64, '2_SLICE_ALL_ME', 1, 47616, [94, 4, 4, 2, 4, 1], [0, 2], 2, rtxProSeen),
    gi('2g.48gb-me', 66, '2_SLICE_NO_ME', 2, 47616, [94, 0, 0, 2, 0, 0], [0, 2], 2, rtxProSeen),
    gi('4g.96gb', 0, '4_SLICE', 1, 95360, [188, 4, 4, 4, 4, 1], [0], 4, rtxProGuess),
    gi('4g.96gb+gfx', 32, '4_SLICE_GFX', 1, 95360, [188, 4, 4, 4, 4, 1], [0], 4, rtxProGuess),
  ],
};

export const GPU_MODELS: readonly GpuModel[] = [
  {
    key: 'A100-SXM4-40GB',
    name: 'NVIDIA A100-SXM4-40GB',
    brand: 'Nvidia',
    architecture: 'Ampere',
    computeCapability: [8, 0],
    memoryMiB: 40960,
    pciDeviceId: 0x20b0,
    pciSubsystemId: 0x134f,
    multiprocessors: 108,
    powerLimitW: 400,
    mig: a100_40,
    provenance: facts(seen('S4, S1, S12'), { pciSubsystemId: seen('S59', 'DGX A100') }),
  },
  {
    key: 'A100-SXM4-80GB',
    name: 'NVIDIA A100-SXM4-80GB',
    brand: 'Nvidia',
    architecture: 'Ampere',
    computeCapability: [8, 0],
    memoryMiB: 81920,
    pciDeviceId: 0x20b2,
    pciSubsystemId: 0x1463,
    multiprocessors: 108,
    powerLimitW: 400,
    mig: a100_80,
    provenance: facts(seen('S1, S12')),
  },
  {
    key: 'A100-PCIE-40GB',
    name: 'NVIDIA A100-PCIE-40GB',
    brand: 'Nvidia',
    architecture: 'Ampere',
    computeCapability: [8, 0],
    memoryMiB: 40960,
    pciDeviceId: 0x20f1,
    pciSubsystemId: 0x145f,
    multiprocessors: 108,
    powerLimitW: 250,
    mig: a100_40,
    provenance: facts(seen('S1, S14'), {
      multiprocessors: inferred('FAKEGPU', 'same GA100 configuration as the SXM4 part'),
    }),
  },
  {
    key: 'A100-PCIE-80GB',
    name: 'NVIDIA A100 80GB PCIe',
    brand: 'Nvidia',
    architecture: 'Ampere',
    computeCapability: [8, 0],
    memoryMiB: 81920,
    pciDeviceId: 0x20b5,
    pciSubsystemId: 0x1533,
    multiprocessors: 108,
    powerLimitW: 300,
    mig: a100_80,
    provenance: facts(seen('S1, S16')),
  },
  {
    key: 'A30',
    name: 'NVIDIA A30',
    brand: 'Nvidia',
    architecture: 'Ampere',
    computeCapability: [8, 0],
    memoryMiB: 24576,
    pciDeviceId: 0x20b7,
    pciSubsystemId: 0x1532,
    multiprocessors: 56,
    powerLimitW: 165,
    mig: a30,
    provenance: facts(seen('S1, S17')),
  },
  {
    key: 'A10',
    name: 'NVIDIA A10',
    brand: 'Nvidia',
    architecture: 'Ampere',
    computeCapability: [8, 6],
    memoryMiB: 23028,
    pciDeviceId: 0x2236,
    pciSubsystemId: 0x1482,
    multiprocessors: 72,
    powerLimitW: 150,
    provenance: facts(seen('S1, S12'), {
      multiprocessors: inferred('FAKEGPU', 'NVIDIA spec sheet core count / 128; not seen in NVML output'),
      powerLimitW: inferred('FAKEGPU', 'spec sheet'),
    }),
  },
  {
    key: 'A10G',
    name: 'NVIDIA A10G',
    brand: 'Nvidia',
    architecture: 'Ampere',
    computeCapability: [8, 6],
    memoryMiB: 23028,
    pciDeviceId: 0x2237,
    pciSubsystemId: 0x152f,
    multiprocessors: 80,
    powerLimitW: 300,
    provenance: facts(seen('S1, S22')),
  },
  {
    key: 'T4',
    name: 'Tesla T4',
    brand: 'Nvidia',
    architecture: 'Turing',
    computeCapability: [7, 5],
    memoryMiB: 15360,
    pciDeviceId: 0x1eb8,
    pciSubsystemId: 0x12a2,
    multiprocessors: 40,
    powerLimitW: 70,
    provenance: facts(seen('S1, S24', 'and the OpenShift conformance slice of the real driver')),
  },
  {
    key: 'L4',
    name: 'NVIDIA L4',
    brand: 'Nvidia',
    architecture: 'Ada Lovelace',
    computeCapability: [8, 9],
    memoryMiB: 23034,
    pciDeviceId: 0x27b8,
    pciSubsystemId: 0x16ca,
    multiprocessors: 58,
    powerLimitW: 72,
    provenance: facts(seen('S1, S25')),
  },
  {
    key: 'L40S',
    name: 'NVIDIA L40S',
    brand: 'Nvidia',
    architecture: 'Ada Lovelace',
    computeCapability: [8, 9],
    memoryMiB: 46068,
    pciDeviceId: 0x26b9,
    pciSubsystemId: 0x1851,
    multiprocessors: 142,
    powerLimitW: 350,
    provenance: facts(seen('S1, S26', 'memory with ECC on')),
  },
  {
    key: 'H100-SXM5-80GB',
    name: 'NVIDIA H100 80GB HBM3',
    brand: 'Nvidia',
    architecture: 'Hopper',
    computeCapability: [9, 0],
    memoryMiB: 81559,
    pciDeviceId: 0x2330,
    pciSubsystemId: 0x16c1,
    multiprocessors: 132,
    powerLimitW: 700,
    mig: h100,
    provenance: facts(seen('S1, S7, S12, S27')),
  },
  {
    key: 'H100-PCIE',
    name: 'NVIDIA H100 PCIe',
    brand: 'Nvidia',
    architecture: 'Hopper',
    computeCapability: [9, 0],
    memoryMiB: 81559,
    pciDeviceId: 0x2331,
    pciSubsystemId: 0x1626,
    multiprocessors: 114,
    powerLimitW: 350,
    mig: h100Pcie,
    provenance: facts(seen('S1, S28')),
  },
  {
    key: 'H100-NVL',
    name: 'NVIDIA H100 NVL',
    brand: 'Nvidia',
    architecture: 'Hopper',
    computeCapability: [9, 0],
    memoryMiB: 95830,
    pciDeviceId: 0x2321,
    pciSubsystemId: 0x1839,
    multiprocessors: 132,
    powerLimitW: 400,
    mig: h100Nvl,
    provenance: facts(seen('S1, S29, S31')),
  },
  {
    key: 'H200',
    name: 'NVIDIA H200',
    brand: 'Nvidia',
    architecture: 'Hopper',
    computeCapability: [9, 0],
    memoryMiB: 143771,
    pciDeviceId: 0x2335,
    pciSubsystemId: 0x18be,
    multiprocessors: 132,
    powerLimitW: 700,
    mig: h200,
    provenance: facts(seen('S1, S8, S32, S33')),
  },
  {
    key: 'GH200',
    name: 'NVIDIA GH200 480GB',
    brand: 'Nvidia',
    architecture: 'Hopper',
    computeCapability: [9, 0],
    memoryMiB: 97871,
    pciDeviceId: 0x2342,
    pciSubsystemId: 0x1809,
    multiprocessors: 132,
    powerLimitW: 900,
    mig: gh200,
    coherentWithCpu: true,
    provenance: facts(seen('S1, S34, S35')),
  },
  {
    key: 'B200',
    name: 'NVIDIA B200',
    brand: 'Nvidia',
    architecture: 'Blackwell',
    computeCapability: [10, 0],
    memoryMiB: 183359,
    pciDeviceId: 0x2901,
    pciSubsystemId: 0x1999,
    multiprocessors: 148,
    powerLimitW: 1000,
    mig: b200,
    provenance: facts(seen('S1, S36, S37, S72')),
  },
  {
    key: 'B300',
    name: 'NVIDIA B300 SXM6 AC',
    brand: 'Nvidia',
    architecture: 'Blackwell',
    computeCapability: [10, 3],
    memoryMiB: 275040,
    pciDeviceId: 0x3182,
    pciSubsystemId: 0x20e6,
    multiprocessors: 148,
    powerLimitW: 1100,
    mig: b300,
    provenance: facts(seen('S1, B300')),
  },
  {
    key: 'GB200',
    name: 'NVIDIA GB200',
    brand: 'Nvidia',
    architecture: 'Blackwell',
    computeCapability: [10, 0],
    memoryMiB: 189471,
    pciDeviceId: 0x2941,
    pciSubsystemId: 0x2046,
    multiprocessors: 152,
    powerLimitW: 1200,
    mig: gb200,
    coherentWithCpu: true,
    nvlinkFabric: true,
    provenance: facts(seen('S1, S38, DRANET'), {
      multiprocessors: inferred('FAKEGPU', 'only seen in a unit-test stub'),
    }),
  },
  {
    key: 'GB300',
    name: 'NVIDIA GB300',
    brand: 'Nvidia',
    architecture: 'Blackwell',
    computeCapability: [10, 3],
    memoryMiB: 284208,
    pciDeviceId: 0x31c2,
    pciSubsystemId: 0x21ec,
    multiprocessors: 152,
    powerLimitW: 1400,
    mig: gb300,
    coherentWithCpu: true,
    nvlinkFabric: true,
    provenance: facts(
      seen('DRANET', 'Azure ND GB300 v6 and OCI GB300 captured slices: name, CC 10.3, 284208Mi, ATS'),
      {
        pciDeviceId: seen('GB300', 'lspci 10de:31c2'),
        pciSubsystemId: inferred('FAKEGPU', 'no public nvidia-smi -q of a GB300 found'),
        multiprocessors: inferred(
          'FAKEGPU',
          'NVIDIA says up to 160; no device query found; GB200 figure used',
        ),
        powerLimitW: seen('GB300', 'nvidia-smi power cap'),
      },
    ),
  },
  {
    key: 'RTX-PRO-6000-BSE',
    name: 'NVIDIA RTX PRO 6000 Blackwell Server Edition',
    brand: 'Nvidia',
    architecture: 'Blackwell',
    computeCapability: [12, 0],
    memoryMiB: 97887,
    pciDeviceId: 0x2bb5,
    pciSubsystemId: 0x204e,
    multiprocessors: 188,
    powerLimitW: 600,
    mig: rtxPro,
    provenance: facts(seen('S1, S40, S41')),
  },
];
