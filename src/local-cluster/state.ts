import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot } from './build.js';
import type { Layout } from './config.js';
import { isAlive, readPid } from './process.js';
import { defaultRelease, releaseOf, type KubernetesRelease } from './releases.js';
import type { GpuOffer } from '../tools/karpenter/gpu-offer.js';

/** What one cluster directory holds: the options it was started with, and which of its components run. */

/** Components in start order; `down` stops them in reverse. */
export const COMPONENT_ORDER = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'containerd',
  'kubelet',
  'kube-proxy',
  'fakegpu-compute-domain-controller',
  'fakegpu-plugin',
  'kwok',
  'fakegpu-fleet',
  'karpenter',
  'kueue',
] as const;
export type ComponentName = (typeof COMPONENT_ORDER)[number];

/**
 * The binary a component runs as, where it is not the component's name: `stop` knows a pid file's
 * process as ours by it, so a wrong name here leaves the process running after `down`.
 */
export function binaryOf(name: ComponentName): string {
  return name === 'karpenter' ? 'karpenter-kwok' : name;
}

export function defaultClusterDir(): string {
  return process.env['FAKEGPU_CLUSTER_DIR'] ?? join(cacheRoot(), 'cluster');
}

export const DEFAULT_NODE = 'fakegpu-node';

/**
 * Components `restart` knows how to bring back on their own, leaving everything else running; here, not in
 * restart.ts, so that the CLI can list them without loading how to start each.
 */
export const RESTARTABLE = [
  'etcd',
  'kube-apiserver',
  'kubelet',
  'fakegpu-plugin',
  'fakegpu-fleet',
  'fakegpu-compute-domain-controller',
  'kwok',
  'kube-scheduler',
  'kube-controller-manager',
] as const;
export type Restartable = (typeof RESTARTABLE)[number];

/** Most fleet replicas here: each has ports of its own in `OWN_PORTS` (host.ts). */
export const MAX_FLEET_REPLICAS = 16;

/** The machine of KWOK nodes when neither --kwok-profile nor --profile names one. */
export const KWOK_DEFAULT_PROFILE = 'dgx-h100';

export interface State {
  nodeName: string;
  /** The Kubernetes version built and run (releases.ts); absent: the default release (older state files). */
  kubernetes?: string;
  bin: string;
  cniBin: string;
  profile: string | null;
  dynamicMig: boolean;
  nicNumaAttribute?: 'dranet' | 'standard';
  /** False: the plugin publishes no NIC slices (`--no-nics`); absent in older state files: true. */
  nics?: boolean;
  /** The plugin's NVIDIA gates beyond the sharing ones, e.g. `NVMLDeviceHealthCheck=true`. */
  pluginGates?: string;
  /** The plugin's and the fleet's `--consumable-shares` (e.g. `memory`); absent: disabled. */
  consumableShares?: string;
  healthService?: boolean;
  kwokNodes?: number;
  /** KWOK controllers, each managing one partition of the nodes (kwok-partition.ts); absent: one. */
  kwokControllers?: number;
  kwokProfile?: string | null;
  /** A FleetPools file (absolute) whose pools list their nodes: the KWOK nodes and the fleet's machines. */
  kwokPools?: string;
  /** Absent: true (state files from before the option). */
  kwokFleet?: boolean;
  /** Fleet processes sharing the KWOK nodes by shard Leases (`--fleet-replicas`); absent: 1. */
  fleetReplicas?: number;
  /** The API server audits every ResourceSlice write to `logs/audit.log`; absent: no audit log. */
  auditSlices?: boolean;
  /** A machine with NVLink fabric among the nodes: NVIDIA's ComputeDomain side runs too. */
  computeDomains?: boolean;
  /** Upstream projects run beside the cluster (`--with`); absent: none. */
  with?: Integration[];
  /** With Karpenter: its nodes' GPUs as DRA devices only, or as `nvidia.com/gpu` and no slices. */
  karpenterGpus?: GpuOffer;
  /**
   * fakegpu installed by its Helm chart, from its image in the node's containerd, instead of as host
   * processes; kube-proxy runs so the chart's pods reach the API server. Absent: false.
   */
  helm?: boolean;
  /** Whose objects etcd's data holds: `up` starts from empty data where it is not this `up`'s mode. */
  etcdOf?: FakegpuMode;
}

export function releaseOfState(s: State): KubernetesRelease {
  return s.kubernetes === undefined ? defaultRelease() : releaseOf(s.kubernetes, 'state.json: kubernetes');
}

export function readState(l: Layout): State | null {
  try {
    return JSON.parse(readFileSync(join(l.dir, 'state.json'), 'utf8')) as State;
  } catch {
    return null;
  }
}

export function writeState(l: Layout, s: State): void {
  writeFileSync(join(l.dir, 'state.json'), `${JSON.stringify(s, null, 2)}\n`);
}

/** How fakegpu runs in a cluster: as host processes, or from its Helm chart (`--helm`). */
export type FakegpuMode = 'host-processes' | 'helm';

export const modeOf = (s: Pick<State, 'helm'>): FakegpuMode => (s.helm === true ? 'helm' : 'host-processes');

/**
 * Whether `up` must start from empty etcd data: the data holds what fakegpu made running the other way.
 * `down` keeps etcd's data, and the objects each way made belong to it: Helm will not adopt the
 * DeviceClasses `kubectl apply` made ("exists and cannot be imported into the current release"), and the
 * chart's DaemonSet, left in etcd, would run a second plugin beside the host's. Removing them on `down`
 * instead would need the API server up, which a crashed cluster's `down` lacks, and would miss the
 * objects of a start that failed halfway. A state file without `etcdOf` is an older fakegpu's, which
 * recorded `--helm` before a start that could fail over the host processes' objects: its data is
 * known to be theirs only where it never ran the chart.
 */
export function freshEtcdFor(previous: State | null, next: State): boolean {
  if (previous === null) return false;
  const holds = previous.etcdOf ?? (previous.helm === true ? 'unknown' : 'host-processes');
  return holds !== modeOf(next);
}

/** Upstream projects `cluster up --with` builds and runs beside the cluster. */
export const INTEGRATIONS = ['karpenter', 'kueue'] as const;
export type Integration = (typeof INTEGRATIONS)[number];

/** KWOK runs for the KWOK nodes `cluster up` creates, and for the ones an autoscaler launches. */
export function kwokRuns(s: State | null): boolean {
  return (s?.kwokNodes ?? 0) > 0 || (s?.with ?? []).includes('karpenter');
}

/** Components this cluster runs as host processes: the plugin only with a profile, none of fakegpu's with the chart. */
export function componentsOf(s: State | null): ComponentName[] {
  const helm = s?.helm === true;
  return COMPONENT_ORDER.filter((n) => {
    if (n === 'kube-proxy') return helm;
    if (helm && n.startsWith('fakegpu-')) return false;
    if (n === 'fakegpu-plugin') return (s?.profile ?? null) !== null;
    if (n === 'fakegpu-compute-domain-controller') return s?.computeDomains === true;
    if (n === 'kwok') return kwokRuns(s);
    if (n === 'fakegpu-fleet') return kwokRuns(s) && s?.kwokFleet !== false;
    if (n === 'karpenter' || n === 'kueue') return (s?.with ?? []).includes(n);
    return true;
  });
}

export function running(l: Layout): Record<ComponentName, number | null> {
  return Object.fromEntries(
    COMPONENT_ORDER.map((n) => {
      const pid = readPid(l.run, n);
      return [n, pid !== null && isAlive(pid) ? pid : null];
    }),
  ) as Record<ComponentName, number | null>;
}

/**
 * NVIDIA's sharing gates are off by default in the real driver; a demo cluster turns them on, except MPS
 * beside dynamic MIG, which NVIDIA's rules forbid.
 */
export const PLUGIN_FEATURE_GATES = 'TimeSlicingSettings=true,MPSSupport=true';

/** The gates the cluster's plugin and fleet run with: the demo's, then the user's `--feature-gates`. */
export function clusterGates(s: Pick<State, 'dynamicMig' | 'pluginGates'>): string {
  const demo = s.dynamicMig ? 'TimeSlicingSettings=true' : PLUGIN_FEATURE_GATES;
  return [demo, s.pluginGates ?? ''].filter(Boolean).join(',');
}
