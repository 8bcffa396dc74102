import { buildDevices, type GpuDevices } from './device/allocatable.js';
import { defaultGates, type FeatureGates } from './feature-gates/gates.js';
import { discoverGpus } from './device/discover.js';
import type { ConsumableShares } from './device/consumable-shares.js';
import { DEFAULT_RELEASE, RELEASES, type DriverRelease } from './device/release.js';
import { FakegpuError, show } from '../errors.js';
import { applyTaints, type DeviceTaints } from './health/taints.js';
import { buildMachine } from './hardware/build.js';
import type { Machine } from './hardware/machine.js';
import { machineTopology } from './hardware/sysfs.js';
import type { List, ResourceSlice } from '../kube/types/resource.js';
import { compareSemver, formatSemver, type Semver } from '../kube/types/version.js';
import { RELEASE_LIMITS } from '../kube/types/limits.js';
import { MockNvml } from './nvml/mock.js';
import { MemoryMigStateStore, type MigStateStore } from './nvml/state.js';
import type { ResolvedProfile } from './profile/load.js';
import { buildNicSlices, buildSlices, checkSliceNames, DRIVER_NAME } from './slice/build.js';
import { DRANET, nicDevices, type NicAttributeOptions } from './nic/attributes.js';
import { isDnsSubdomain } from '../kube/types/names.js';
import { COMPUTE_DOMAIN_DRIVER, computeDomainSlices } from './compute-domain/slice.js';

export interface RenderOptions {
  nodeName: string;
  dynamicMig: boolean;
  driverVersion?: string | undefined;
  driverName: string;
  kubernetesVersion: Semver;
  release: DriverRelease;
  /** NVIDIA's feature gates, resolved; absent: the release's defaults. */
  gates?: FeatureGates | undefined;
  /** `--consumable-shares`, checked against the gates; absent: disabled. */
  consumableShares?: ConsumableShares | undefined;
  /** Where MIG state lives, chosen per machine; a fresh in-memory store renders the machine as booted. */
  migState?: (machine: Machine) => MigStateStore;
  /** Publish the machine's NICs as DRANET would, under this driver name; absent: GPUs only. */
  nics?: NicRenderOptions | undefined;
  /** Taints NVIDIA's health monitor put on devices (by name). */
  taints?: DeviceTaints | undefined;
  /**
   * NVIDIA's compute-domain slice too, on a machine with an NVLink fabric, as the plugin and the fleet
   * publish it by default; absent: GPUs (and NICs) only.
   */
  computeDomains?: boolean | undefined;
}

export interface NicRenderOptions extends NicAttributeOptions {
  driverName: string;
}

export function checkNodeName(name: string, field: string): string {
  if (!isDnsSubdomain(name)) {
    throw new FakegpuError(
      field,
      `${show(name)} is not a valid node name; expected a DNS subdomain (lower-case a-z, 0-9, '-' and '.', at most 253 characters)`,
    );
  }
  return name;
}

export interface NodeModel {
  machine: Machine;
  nvml: MockNvml;
  devices: GpuDevices[];
}

/** profile → hardware → mock NVML → device model, for one node. Pure apart from the state store. */
export function modelNode(profile: ResolvedProfile, opts: RenderOptions): NodeModel {
  const machine = buildMachine(profile, {
    nodeName: checkNodeName(opts.nodeName, '--node-name'),
    dynamicMig: opts.dynamicMig,
    driverVersion: opts.driverVersion,
  });
  const nvml = new MockNvml(machine, opts.migState ? opts.migState(machine) : new MemoryMigStateStore());
  const gpus = discoverGpus(nvml, machineTopology(machine));
  return {
    machine,
    nvml,
    devices: buildDevices(gpus, {
      dynamicMig: opts.dynamicMig,
      release: opts.release,
      gates: opts.gates ?? defaultGates(),
      fabricManager: machine.fabricManager,
      consumableShares: opts.consumableShares,
    }),
  };
}

export function renderSlices(profile: ResolvedProfile, opts: RenderOptions): List<ResourceSlice> {
  return { apiVersion: 'v1', kind: 'List', metadata: {}, items: renderNode(profile, opts).items };
}

/**
 * The oldest release whose `RELEASE_LIMITS` fakegpu knows, 1.34, is the first to serve `resource.k8s.io/v1`,
 * the only version slices are rendered in.
 */
const FIRST_V1 = RELEASE_LIMITS[0]?.release ?? { major: 1, minor: 34, patch: 0 };

/** `DeviceAttribute.ints` and the other lists: alpha in Kubernetes 1.36 (KEP-5491). */
const FIRST_LIST = { major: 1, minor: 36, patch: 0 };

/** What slices are rendered for must be able to store them, and two drivers of a node must differ. */
function checkRenderTarget(opts: RenderOptions): void {
  if (compareSemver(opts.kubernetesVersion, FIRST_V1) < 0)
    throw new FakegpuError(
      '--kubernetes-version',
      `${formatSemver(opts.kubernetesVersion)} has no resource.k8s.io/v1, the API fakegpu renders ResourceSlices in; give ${FIRST_V1.major}.${FIRST_V1.minor} or later`,
    );
  if (opts.gates?.DRAListTypeAttributes && compareSemver(opts.kubernetesVersion, FIRST_LIST) < 0)
    throw new FakegpuError(
      '--feature-gates',
      `DRAListTypeAttributes=true: Kubernetes ${formatSemver(opts.kubernetesVersion)} has no list attributes; they came in ${FIRST_LIST.major}.${FIRST_LIST.minor} (KEP-5491, behind the API server's and scheduler's gate DRAListTypeAttributes)`,
    );
  if (opts.nics?.driverName === opts.driverName)
    throw new FakegpuError(
      '--driver-name',
      `${show(opts.driverName)} is the NIC slices' driver name too (--nic-driver-name): the GPU and NIC slices would be one pool of two conflicting publishers; give each its own name, or --no-nics`,
    );
}

/** The node's slices with the model they came from. */
export function renderNode(
  profile: ResolvedProfile,
  opts: RenderOptions,
): { model: NodeModel; items: ResourceSlice[] } {
  checkRenderTarget(opts);
  checkSliceNames(
    opts.nodeName,
    { driverName: opts.driverName, indexedNames: RELEASES[opts.release].indexedSliceNames },
    '--node-name',
  );
  if (opts.nics)
    checkSliceNames(opts.nodeName, { driverName: opts.nics.driverName, indexedNames: true }, '--node-name');
  const model = modelNode(profile, opts);
  const { machine, devices } = model;
  const items = buildSlices(opts.taints ? applyTaints(devices, opts.taints, opts.release) : devices, {
    nodeName: opts.nodeName,
    driverName: opts.driverName,
    dynamicMig: opts.dynamicMig,
    kubernetesVersion: opts.kubernetesVersion,
    release: opts.release,
  });
  if (opts.nics) items.push(...renderNicSlices(machine, opts.nics));
  if (opts.computeDomains) items.push(...renderComputeDomainSlices(machine));
  return { model, items };
}

/** The API server version a profile is validated for: the first with today's limits and layout. */
const VALIDATED_FOR = RELEASE_LIMITS.at(-1)?.release ?? FIRST_V1;

/**
 * The one check every profile passes, wherever it comes from (`validate`, what `capture node` is about
 * to write): the whole render with its defaults, GPUs and NICs, so that what validates also renders.
 */
export function validateProfile(
  profile: ResolvedProfile,
  opts: { dynamicMig: boolean; nics?: boolean; release?: DriverRelease; gates?: FeatureGates },
): NodeModel {
  return renderNode(profile, {
    nodeName: 'validate',
    dynamicMig: opts.dynamicMig,
    driverName: DRIVER_NAME,
    kubernetesVersion: VALIDATED_FOR,
    release: opts.release ?? DEFAULT_RELEASE,
    gates: opts.gates,
    nics: opts.nics === false ? undefined : { driverName: DRANET, standardNumaNode: false },
  }).model;
}

/**
 * The slice of NVIDIA's compute-domain driver for a node of this machine: one where the GPUs are in an
 * NVLink fabric (GB200, GB300), none elsewhere. The plugin, the fleet, `render` and `export karpenter`
 * all take it from here, so what a tool shows is what a node publishes.
 */
export function renderComputeDomainSlices(machine: Machine): ResourceSlice[] {
  if (machine.fabric === null) return [];
  checkSliceNames(machine.nodeName, { driverName: COMPUTE_DOMAIN_DRIVER, indexedNames: true }, '--node');
  return computeDomainSlices({ nodeName: machine.nodeName });
}

export function renderNicSlices(machine: Machine, opts: NicRenderOptions): ResourceSlice[] {
  return buildNicSlices(nicDevices(machine.nics, opts), {
    nodeName: machine.nodeName,
    driverName: opts.driverName,
  });
}

/**
 * Whether the profile's machine has an NVLink fabric (GB200, GB300: every GPU a fabric model), and so
 * runs NVIDIA's compute-domain side too.
 */
export function hasNvlinkFabric(profile: ResolvedProfile): boolean {
  return buildMachine(profile, { nodeName: 'fabric-check', dynamicMig: false }).fabric !== null;
}
