import { buildDevices, type GpuDevices } from './device/allocatable.js';
import { discoverGpus } from './device/discover.js';
import { RELEASES, type DriverRelease } from './device/release.js';
import { FakegpuError, show } from '../errors.js';
import { applyTaints, type DeviceTaints } from './health/taints.js';
import { buildMachine } from './hardware/build.js';
import type { Machine } from './hardware/machine.js';
import { machineTopology } from './hardware/sysfs.js';
import type { List, ResourceSlice } from '../kube/types/resource.js';
import type { Semver } from '../kube/types/version.js';
import { MockNvml } from './nvml/mock.js';
import { MemoryMigStateStore, type MigStateStore } from './nvml/state.js';
import type { ResolvedProfile } from './profile/load.js';
import { buildNicSlices, buildSlices, checkSliceNames } from './slice/build.js';
import { nicDevices, type NicAttributeOptions } from './nic/attributes.js';
import { isDnsSubdomain } from '../kube/types/names.js';

export interface RenderOptions {
  nodeName: string;
  dynamicMig: boolean;
  driverVersion?: string | undefined;
  driverName: string;
  kubernetesVersion: Semver;
  release: DriverRelease;
  /** Where MIG state lives, chosen per machine; a fresh in-memory store renders the machine as booted. */
  migState?: (machine: Machine) => MigStateStore;
  /** Publish the machine's NICs as DRANET would, under this driver name; absent: GPUs only. */
  nics?: NicRenderOptions | undefined;
  /** Taints NVIDIA's health monitor put on devices (by name). */
  taints?: DeviceTaints | undefined;
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
    devices: buildDevices(gpus, { dynamicMig: opts.dynamicMig, release: opts.release }),
  };
}

export function renderSlices(profile: ResolvedProfile, opts: RenderOptions): List<ResourceSlice> {
  return { apiVersion: 'v1', kind: 'List', metadata: {}, items: renderNode(profile, opts).items };
}

/** The node's slices with the model they came from. */
export function renderNode(
  profile: ResolvedProfile,
  opts: RenderOptions,
): { model: NodeModel; items: ResourceSlice[] } {
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
  return { model, items };
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
