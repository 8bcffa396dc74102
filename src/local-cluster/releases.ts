import { FakegpuError, show } from '../errors.js';

/**
 * The Kubernetes releases `cluster up --kubernetes-version` builds: each one's newest patch the Go module
 * proxy served when it was pinned (`scripts/pin-kubernetes.mjs` writes its `upstream/<folder>/go.mod`),
 * cached beside the others. What differs between them for fakegpu is here and nowhere else.
 */
export interface KubernetesRelease {
  /** `1.34`: what users type. */
  release: string;
  /** The exact version built: `1.34.4`, `1.38.0-beta.0`. */
  version: string;
  /** Folder under `upstream/` holding its go.mod. */
  folder: string;
  /** A release candidate or beta: built when asked, never the default, marked in every table. */
  preRelease?: true;
  /**
   * A Go newer than the machine's that its go.mod needs, fetched by the go command from the module proxy
   * (`GOTOOLCHAIN`); absent: the machine's own Go.
   */
  goToolchain?: string;
  /**
   * DRA feature gates the local cluster turns on for every component. Each release refuses a gate it does
   * not know, so each lists only its own; GA gates are locked on and left out.
   */
  featureGates: Readonly<Record<string, true>>;
  /**
   * API versions to serve beyond the defaults (`--runtime-config`): an alpha or beta gate that is on makes
   * the scheduler watch its API (DeviceTaintRule), which an API server serves only when asked, else the
   * scheduler's caches never sync and no pod is scheduled.
   */
  runtimeConfig?: string;
  /** What fakegpu does that this release cannot, as one line each (README, `e2e:matrix`). */
  lacks: readonly string[];
  /** Why it cannot be built here yet: `cluster up` refuses it with this, and the matrix reports it. */
  unavailable?: string;
}

/**
 * DRA gates that are alpha or beta in 1.34 (read from each release's pkg/features/kube_features.go).
 * A gate that went GA stays settable to true until it is removed, so later releases may keep it.
 */
const ALPHA_1_34 = {
  DRAPartitionableDevices: true,
  DRAConsumableCapacity: true,
  DRADeviceBindingConditions: true,
  DRAResourceClaimDeviceStatus: true,
  DRADeviceTaints: true,
  DRAExtendedResource: true,
  ResourceHealthStatus: true,
} as const;

export const KUBERNETES_RELEASES: readonly KubernetesRelease[] = [
  {
    release: '1.34',
    version: '1.34.4',
    folder: 'kubernetes-1.34',
    featureGates: ALPHA_1_34,
    // DeviceTaintRule is v1alpha3 here (DRADeviceTaints).
    runtimeConfig: 'resource.k8s.io/v1alpha3=true',
    lacks: [
      'counters share their slice with the devices (the alpha layout of DRAPartitionableDevices)',
      'at most 4 taints per device',
      'no share_id in the kubelet gRPC (consumable capacity is alpha without it)',
      'DRAResourceHealth is v1alpha1 only',
    ],
  },
  {
    release: '1.35',
    version: '1.35.4',
    folder: 'kubernetes-1.35',
    featureGates: { ...ALPHA_1_34, DRADeviceTaintRules: true },
    runtimeConfig: 'resource.k8s.io/v1alpha3=true',
    lacks: ['DRAResourceHealth is v1alpha1 only; health messages are not shown in pod status'],
  },
  {
    release: '1.36',
    version: '1.36.3',
    folder: 'kubernetes-1.36',
    featureGates: { ...ALPHA_1_34, DRADeviceTaintRules: true, DRAListTypeAttributes: true },
    // DeviceTaintRule is v1beta2 here, a beta API off by default.
    runtimeConfig: 'resource.k8s.io/v1beta2=true',
    lacks: ['DRAResourceHealth is v1alpha1 only'],
  },
  {
    release: '1.37',
    version: '1.37.2',
    folder: 'kubernetes',
    // GA in 1.37: device taints and their rules, device status. The rest is named so the cluster stays
    // honest if a default moves.
    featureGates: {
      DRAPartitionableDevices: true,
      DRAConsumableCapacity: true,
      DRADeviceBindingConditions: true,
      DRAResourceClaimDeviceStatus: true,
      ResourceHealthStatus: true,
      // Alpha in 1.36 and 1.37 (KEP-5491): NVIDIA's DRAListTypeAttributes publishes numaNode as a list.
      DRAListTypeAttributes: true,
    },
    lacks: [],
  },
  {
    release: '1.38',
    version: '1.38.0-beta.0',
    folder: 'kubernetes-1.38',
    preRelease: true,
    goToolchain: 'go1.27.3',
    // Seen 2026-12-01: `go mod tidy` of k8s.io/kubernetes v1.38.0-beta.0 (with GOTOOLCHAIN=go1.27.3) gets
    // 403 "This module version is not available" for these; no other version of the first two exists.
    unavailable:
      'the Go module proxy does not serve k8s.io/apiextensions-api v0.38.0-beta.0, k8s.io/ktesting v0.38.0-beta.0, sigs.k8s.io/iptables-wrappers v1.0.0 or sigs.k8s.io/structured-merge-diff/v7 v7.0.1, which it needs',
    featureGates: {
      DRAPartitionableDevices: true,
      DRAConsumableCapacity: true,
      DRADeviceBindingConditions: true,
      ResourceHealthStatus: true,
    },
    lacks: [],
  },
];

export const DEFAULT_KUBERNETES_RELEASE = '1.37';

export function defaultRelease(): KubernetesRelease {
  return releaseOf(DEFAULT_KUBERNETES_RELEASE, 'default');
}

/** `1.34 (1.34.4)`, `1.38 (1.38.0-beta.0, pre-release)`: how tables and messages name a release. */
export function releaseLabel(r: KubernetesRelease): string {
  return `${r.release} (${r.version}${r.preRelease ? ', pre-release' : ''})`;
}

/** The releases `cluster up` can build here, by label. */
export function buildableReleases(): string {
  return KUBERNETES_RELEASES.filter((x) => !x.unavailable)
    .map(releaseLabel)
    .join(', ');
}

/** `1.34`, `v1.34`, or the exact `1.34.4` built; anything else names what is there. */
export function releaseOf(text: string, field: string): KubernetesRelease {
  const t = text.trim().replace(/^v/, '');
  const r = KUBERNETES_RELEASES.find((x) => x.release === t || x.version === t);
  if (r?.unavailable)
    throw new FakegpuError(field, `Kubernetes ${r.version} cannot be built yet: ${r.unavailable}`);
  if (r) return r;
  throw new FakegpuError(
    field,
    `${show(text)} is not a release fakegpu builds; it builds ${buildableReleases()}`,
  );
}
