/**
 * NVIDIA's feature gates (`pkg/featuregates/featuregates.go`), one table for every release fakegpu
 * emulates: name, stage, default, the version NVIDIA stamps on it, the releases that have it, and what
 * fakegpu does with it. Read at v25.12.0 and v0.4.1 (tags) and v0.5.0 (the Go module
 * sigs.k8s.io/dra-driver-nvidia-gpu@v0.5.0, whose gates are main @ 9593204's).
 */

import type { DriverRelease } from '../device/release.js';

export type Stage = 'Alpha' | 'Beta';

/** What a gate does in fakegpu: reproduced, or accepted at NVIDIA's default only. */
export type Modelled =
  | { kind: 'modelled' }
  /** The gate changes nothing fakegpu can show, so any value is accepted (why, for the docs). */
  | { kind: 'no-effect'; why: string }
  /** fakegpu reproduces only NVIDIA's default; the other value is refused (why, for the message). */
  | { kind: 'default-only'; why: string };

export interface Gate {
  stage: Stage;
  default: boolean;
  /** NVIDIA's `Version` stamp in the 0.x scheme (25.8 = 0.2, 25.12 = 0.3 in the old one). */
  since: '0.2' | '0.3' | '0.4' | '0.5';
  /** The releases whose gate table has it; a stamp is not proof (DRAListTypeAttributes says 0.4). */
  releases: readonly DriverRelease[];
  fakegpu: Modelled;
  /** NVIDIA's description, shortened. */
  summary: string;
}

const ALL: readonly DriverRelease[] = ['25.12', '0.4', '0.5'];
const FROM_04: readonly DriverRelease[] = ['0.4', '0.5'];
const ONLY_05: readonly DriverRelease[] = ['0.5'];
const MODELLED: Modelled = { kind: 'modelled' };

const CD_DEFAULT = "fakegpu's ComputeDomain daemons have no other mode";

export const GATES = {
  TimeSlicingSettings: {
    stage: 'Alpha',
    default: false,
    since: '0.2',
    releases: ALL,
    fakegpu: MODELLED,
    summary: 'time-slicing intervals in GpuConfig/MigDeviceConfig sharing',
  },
  MPSSupport: {
    stage: 'Alpha',
    default: false,
    since: '0.2',
    releases: ALL,
    fakegpu: MODELLED,
    summary: 'MPS sharing in GpuConfig/MigDeviceConfig',
  },
  IMEXDaemonsWithDNSNames: {
    stage: 'Beta',
    default: true,
    since: '0.2',
    releases: ALL,
    fakegpu: { kind: 'default-only', why: CD_DEFAULT },
    summary: 'IMEX daemons address each other by DNS names',
  },
  PassthroughSupport: {
    stage: 'Alpha',
    default: false,
    since: '0.3',
    releases: ALL,
    fakegpu: MODELLED,
    summary: 'gpu-vfio-<i> devices for VFIO passthrough (vfio.gpu.nvidia.com)',
  },
  DynamicMIG: {
    stage: 'Alpha',
    default: false,
    since: '0.3',
    releases: ALL,
    fakegpu: MODELLED,
    summary: 'MIG devices created at prepare from partitionable full GPUs (fakegpu --dynamic-mig)',
  },
  NVMLDeviceHealthCheck: {
    stage: 'Alpha',
    default: false,
    since: '0.3',
    releases: ALL,
    fakegpu: MODELLED,
    summary: 'NVML health events become device taints',
  },
  ComputeDomainCliques: {
    stage: 'Beta',
    default: true,
    since: '0.3',
    releases: ALL,
    fakegpu: { kind: 'default-only', why: CD_DEFAULT },
    summary: 'ComputeDomainClique objects per NVLink clique',
  },
  CrashOnNVLinkFabricErrors: {
    stage: 'Beta',
    default: true,
    since: '0.3',
    releases: ALL,
    fakegpu: { kind: 'no-effect', why: "fakegpu's fake NVLink fabric never reports a fabric error" },
    summary: 'the ComputeDomain daemon exits on NVLink fabric errors',
  },
  DeviceMetadata: {
    stage: 'Alpha',
    default: false,
    since: '0.4',
    releases: FROM_04,
    fakegpu: MODELLED,
    summary: "KEP-5304 device metadata files in a VFIO claim's containers",
  },
  DRAListTypeAttributes: {
    stage: 'Alpha',
    default: false,
    since: '0.4',
    releases: ONLY_05,
    fakegpu: MODELLED,
    summary: 'resource.kubernetes.io/numaNode as a list (Kubernetes 1.36+ with the same gate)',
  },
  FabricManagerPartitioning: {
    stage: 'Alpha',
    default: false,
    since: '0.5',
    releases: ONLY_05,
    fakegpu: MODELLED,
    summary: 'gpuModuleID and partition<N> attributes; claims must match one Fabric Manager partition',
  },
  HostManagedIMEXDaemon: {
    stage: 'Alpha',
    default: false,
    since: '0.5',
    releases: ONLY_05,
    fakegpu: {
      kind: 'no-effect',
      why: "it only permits the chart's imex.mode=hostManaged, which fakegpu does not run",
    },
    summary: 'IMEX daemons managed on the host instead of by the driver',
  },
  ConsumableShares: {
    stage: 'Alpha',
    default: false,
    since: '0.5',
    releases: ONLY_05,
    fakegpu: MODELLED,
    summary: 'devices allocatable to several claims by consumed capacity (--consumable-shares)',
  },
} as const satisfies Record<string, Gate>;

export type GateName = keyof typeof GATES;
export const GATE_NAMES = Object.keys(GATES) as GateName[];

/** Every gate of NVIDIA's table, resolved: what the driver's `featuregates.Enabled` answers. */
export type FeatureGates = Record<GateName, boolean>;

/**
 * component-base's own gates, which NVIDIA's `--feature-gates` also takes (its chart's values name
 * them); they change only logging, so fakegpu accepts and ignores them.
 */
export const LOGGING_GATES = ['ContextualLogging', 'LoggingAlphaOptions', 'LoggingBetaOptions'] as const;

export function defaultGates(): FeatureGates {
  return Object.fromEntries(GATE_NAMES.map((g) => [g, GATES[g].default])) as FeatureGates;
}

export function gatesOf(release: DriverRelease): GateName[] {
  return GATE_NAMES.filter((g) => (GATES[g].releases as readonly string[]).includes(release));
}

/** A rule of NVIDIA's `ValidateFeatureGates`, checked in its order; the first broken one is reported. */
export interface GateRule {
  kind: 'requires' | 'exclusive';
  gate: GateName;
  other: GateName;
}

const V25_12_RULES: readonly GateRule[] = [
  { kind: 'requires', gate: 'ComputeDomainCliques', other: 'IMEXDaemonsWithDNSNames' },
  { kind: 'exclusive', gate: 'DynamicMIG', other: 'PassthroughSupport' },
  { kind: 'exclusive', gate: 'DynamicMIG', other: 'NVMLDeviceHealthCheck' },
  { kind: 'exclusive', gate: 'DynamicMIG', other: 'MPSSupport' },
];
/** v0.4.1 added the last two; v0.5.0 has the same six (#1273 dropped FabricManagerPartitioning's before). */
const V04_RULES: readonly GateRule[] = [
  ...V25_12_RULES,
  { kind: 'exclusive', gate: 'PassthroughSupport', other: 'NVMLDeviceHealthCheck' },
  { kind: 'requires', gate: 'DeviceMetadata', other: 'PassthroughSupport' },
];

export const RULES: Record<DriverRelease, readonly GateRule[]> = {
  '25.12': V25_12_RULES,
  '0.4': V04_RULES,
  '0.5': V04_RULES,
};

/** NVIDIA's message for a broken rule, verbatim from its format strings. */
export function ruleMessage(r: GateRule): string {
  return r.kind === 'requires'
    ? `feature gate ${r.gate} requires ${r.other} to also be enabled`
    : `feature gate ${r.gate} is currently mutually exclusive with ${r.other}`;
}

export function brokenRule(gates: FeatureGates, release: DriverRelease): GateRule | undefined {
  return RULES[release].find((r) =>
    r.kind === 'requires' ? gates[r.gate] && !gates[r.other] : gates[r.gate] && gates[r.other],
  );
}

/** NVIDIA's defaults with some gates set, as a test or a bench states what it runs with. */
export function gatesWith(set: Partial<FeatureGates>): FeatureGates {
  return { ...defaultGates(), ...set };
}
