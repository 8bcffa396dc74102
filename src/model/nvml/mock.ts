import { GI_PROFILE_ENUM, type GiProfile } from '../catalog/types.js';
import { FakegpuError } from '../../errors.js';
import { migUuid } from '../hardware/identity.js';
import type { GpuHardware, Machine } from '../hardware/machine.js';
import { nvmlBusId } from '../hardware/pci.js';
import { refusal, type Placed } from '../mig/placement.js';
import { eccCount, faultKey, MockEventSet, SUPPORTED_EVENTS } from './events.js';
import type { GpuMigState, MigState, MigStateStore, NvmlFault, HardwareFault } from './state.js';
import {
  CI_PROFILE_SLICES,
  fullComputeInstanceProfile,
  type ComputeInstanceInfo,
  type ComputeInstanceProfileInfo,
  type GpuFabricInfo,
  type GpuInstanceInfo,
  type GpuInstancePlacement,
  type GpuInstanceProfileInfo,
  type MemoryInfo,
  type Nvml,
  NVML_ADDRESSING,
  NVML_ARCH,
  NVML_BRAND,
  NVML_GPU_FABRIC_STATE,
  NVML_MEMORY_ERROR,
  NVML_RETURN,
  type NvmlEventSet,
  type NvmlComputeInstance,
  type NvmlDevice,
  NvmlError,
  type NvmlGpuInstance,
  type NvmlMigDevice,
  type PciInfo,
} from './types.js';

const MiB = 1024n * 1024n;
/** What the fake nvidia-smi shows too. */
const IDLE_TEMPERATURE_C = 32;

const ARCH = {
  Turing: NVML_ARCH.TURING,
  Ampere: NVML_ARCH.AMPERE,
  'Ada Lovelace': NVML_ARCH.ADA,
  Hopper: NVML_ARCH.HOPPER,
  Blackwell: NVML_ARCH.BLACKWELL,
} as const;

const CI_PROFILE_COUNT = Object.keys(CI_PROFILE_SLICES).length;

/** Compute slices of a GI profile: the `<G>g` of its name. */
function computeSlices(p: GiProfile): number {
  return Number(/^(\d+)g/.exec(p.name)?.[1] ?? 1);
}

/** GI ids follow the slot tree nvidia-smi shows: 7g → 0, 4g/3g → 1-2, 2g → 3-6, 1g → 7-14 on 8-slice parts. */
export function gpuInstanceId(memorySlices: number, start: number, size: number): number {
  return memorySlices / size - 1 + start / size;
}

function initialState(machine: Machine): MigState {
  const gpus: Record<string, GpuMigState> = {};
  for (const g of machine.gpus) {
    const slices = g.model.mig?.memorySlices ?? 8;
    gpus[g.uuid] = {
      migMode: g.migEnabled ? 1 : 0,
      gpuInstances: g.migInstances.map((p) => ({
        id: gpuInstanceId(slices, p.start, p.profile.placementSize),
        profileId: p.profile.id,
        start: p.start,
        computeInstances: [{ id: 0, profileId: fullComputeInstanceProfile(p.profile.enumName) }],
      })),
    };
  }
  return { version: 1, gpus };
}

/**
 * NVML over the hardware model. Static facts come from the machine; MIG mode and instances live in a
 * state store and every change is saved before the call returns.
 */
export class MockNvml implements Nvml {
  private readonly state: MigState;
  private readonly devices: MockDevice[];
  private readonly eventSets = new Set<MockEventSet>();

  constructor(
    readonly machine: Machine,
    private readonly store: MigStateStore,
  ) {
    const loaded = store.load();
    this.state = loaded ?? initialState(machine);
    const known = new Set(machine.gpus.map((g) => g.uuid));
    for (const uuid of Object.keys(this.state.gpus)) {
      if (!known.has(uuid)) {
        throw new FakegpuError(
          'NVML state',
          `it holds GPU ${uuid}, which this machine does not have; it was written for another node or profile`,
        );
      }
    }
    const fresh = initialState(machine);
    for (const g of machine.gpus)
      this.state.gpus[g.uuid] ??= fresh.gpus[g.uuid] ?? { migMode: 0, gpuInstances: [] };
    if (!loaded) store.save(this.state);
    this.devices = machine.gpus.map((g) => new MockDevice(this, g));
  }

  gpuState(uuid: string): GpuMigState {
    const s = this.state.gpus[uuid];
    if (!s) throw new NvmlError(NVML_RETURN.ERROR_NOT_FOUND, `no GPU ${uuid}`);
    return s;
  }

  commit(): void {
    this.store.save(this.state);
  }

  /** The faults injected into a GPU, in the order they came. */
  faults(uuid: string): readonly NvmlFault[] {
    return this.gpuState(uuid).faults ?? [];
  }

  /**
   * Makes the faults of one source exactly `byGpu` (GPU UUID → faults): new ones are raised as events on
   * every registered set, ones no longer listed are repaired hardware and raise nothing. Saved before it
   * returns. Returns whether anything changed.
   */
  setFaults(source: string, byGpu: ReadonlyMap<string, readonly HardwareFault[]>): boolean {
    for (const uuid of byGpu.keys()) this.gpuState(uuid);
    const raised: [MockDevice, NvmlFault][] = [];
    let changed = false;
    for (const d of this.devices) {
      const s = this.gpuState(d.hw.uuid);
      const before = s.faults ?? [];
      const wanted = (byGpu.get(d.hw.uuid) ?? []).map((f) => ({ ...f, source }));
      const had = new Set(before.filter((f) => f.source === source).map(faultKey));
      const keep = new Set(wanted.map(faultKey));
      const after = before.filter((f) => f.source !== source || keep.has(faultKey(f)));
      const added = wanted.filter((f) => !had.has(faultKey(f)));
      if (added.length === 0 && after.length === before.length) continue;
      after.push(...added);
      for (const f of added) raised.push([d, f]);
      changed = true;
      if (after.length > 0) s.faults = after;
      else delete s.faults;
    }
    if (!changed) return false;
    this.commit();
    for (const [d, f] of raised) for (const set of this.eventSets) set.deliver(d, f);
    return true;
  }

  eventSetCreate(): NvmlEventSet {
    const set = new MockEventSet((s) => this.eventSets.delete(s));
    this.eventSets.add(set);
    return set;
  }

  systemGetDriverVersion(): string {
    return this.machine.driverVersion;
  }

  systemGetCudaDriverVersion(): number {
    return this.machine.cudaDriverVersion;
  }

  deviceGetCount(): number {
    return this.devices.length;
  }

  deviceGetHandleByIndex(index: number): NvmlDevice {
    const d = this.devices[index];
    if (!d) throw new NvmlError(NVML_RETURN.ERROR_INVALID_ARGUMENT, `no GPU at index ${index}`);
    return d;
  }

  deviceGetHandleByUUID(uuid: string): NvmlDevice {
    const d = this.devices.find((x) => x.hw.uuid === uuid);
    if (!d) throw new NvmlError(NVML_RETURN.ERROR_NOT_FOUND, `no GPU ${uuid}`);
    return d;
  }
}

function profileInfo(p: GiProfile): GpuInstanceProfileInfo {
  return {
    id: p.id,
    isP2pSupported: 0,
    sliceCount: computeSlices(p),
    instanceCount: p.instances,
    multiprocessorCount: p.multiprocessors,
    copyEngineCount: p.copyEngines,
    decoderCount: p.decoders,
    encoderCount: p.encoders,
    jpegCount: p.jpegEngines,
    ofaCount: p.ofaEngines,
    memorySizeMB: p.memoryMiB,
  };
}

class MockDevice implements NvmlDevice {
  constructor(
    private readonly nvml: MockNvml,
    readonly hw: GpuHardware,
  ) {}

  private get mig(): GpuMigState {
    return this.nvml.gpuState(this.hw.uuid);
  }

  private migProfiles(): readonly GiProfile[] {
    const profiles = this.hw.model.mig?.profiles;
    if (!profiles)
      throw new NvmlError(NVML_RETURN.ERROR_NOT_SUPPORTED, `${this.hw.model.name} does not support MIG`);
    return profiles;
  }

  profileById(id: number): GiProfile {
    const p = this.migProfiles().find((x) => x.id === id);
    if (!p) throw new NvmlError(NVML_RETURN.ERROR_INVALID_ARGUMENT, `no GPU instance profile id ${id}`);
    return p;
  }

  getIndex(): number {
    return this.hw.index;
  }
  getName(): string {
    return this.hw.model.name;
  }
  getUUID(): string {
    return this.hw.uuid;
  }
  getMinorNumber(): number {
    return this.hw.minor;
  }
  getMemoryInfo(): MemoryInfo {
    const total = BigInt(this.hw.model.memoryMiB) * MiB;
    return { total, free: total, used: 0n };
  }
  getPciInfo(): PciInfo {
    const [domain = '0', bus = '0', dev = '0'] = this.hw.busId.split(/[:.]/);
    return {
      busId: nvmlBusId(this.hw.busId),
      domain: Number.parseInt(domain, 16),
      bus: Number.parseInt(bus, 16),
      device: Number.parseInt(dev, 16),
      pciDeviceId: ((this.hw.model.pciDeviceId << 16) | 0x10de) >>> 0,
      pciSubSystemId: ((this.hw.model.pciSubsystemId << 16) | 0x10de) >>> 0,
    };
  }
  getCudaComputeCapability(): [number, number] {
    return [this.hw.model.computeCapability[0], this.hw.model.computeCapability[1]];
  }
  getArchitecture(): number {
    return ARCH[this.hw.model.architecture];
  }
  getBrand(): number {
    return this.hw.model.brand === 'Tesla' ? NVML_BRAND.TESLA : NVML_BRAND.NVIDIA;
  }
  getAddressingMode(): number {
    const mode = this.hw.addressingMode;
    if (mode === null) throw new NvmlError(NVML_RETURN.ERROR_NOT_SUPPORTED, 'addressing mode not supported');
    return NVML_ADDRESSING[mode === 'None' ? 'NONE' : mode];
  }
  getModuleId(): number {
    return this.hw.moduleId;
  }
  getMultiprocessorCount(): number {
    return this.hw.model.multiprocessors;
  }
  getPowerManagementLimit(): number {
    return this.hw.model.powerLimitW * 1000;
  }
  getMigMode(): [number, number] {
    this.migProfiles();
    return [this.mig.migMode, this.mig.migMode];
  }
  setMigMode(mode: number): void {
    this.migProfiles();
    if (mode !== 0 && mode !== 1) throw new NvmlError(NVML_RETURN.ERROR_INVALID_ARGUMENT, `MIG mode ${mode}`);
    if (this.mig.gpuInstances.length > 0) {
      throw new NvmlError(
        NVML_RETURN.ERROR_IN_USE,
        'GPU instances exist; destroy them before changing MIG mode',
      );
    }
    this.mig.migMode = mode;
    this.nvml.commit();
  }
  getGpuInstanceProfileInfo(profile: number): GpuInstanceProfileInfo {
    const profiles = this.migProfiles();
    if (!Number.isInteger(profile) || profile < 0 || profile >= Object.keys(GI_PROFILE_ENUM).length) {
      throw new NvmlError(NVML_RETURN.ERROR_INVALID_ARGUMENT, `GPU instance profile ${profile}`);
    }
    const p = profiles.find((x) => GI_PROFILE_ENUM[x.enumName] === profile);
    if (!p)
      throw new NvmlError(NVML_RETURN.ERROR_NOT_SUPPORTED, `GPU instance profile ${profile} not supported`);
    return profileInfo(p);
  }
  getGpuInstancePossiblePlacements(info: GpuInstanceProfileInfo): GpuInstancePlacement[] {
    const p = this.profileById(info.id);
    return p.placements.map((start) => ({ start, size: p.placementSize }));
  }

  placed(): Placed[] {
    return this.mig.gpuInstances.map((gi) => ({ profile: this.profileById(gi.profileId), start: gi.start }));
  }

  createGpuInstanceWithPlacement(
    info: GpuInstanceProfileInfo,
    placement: GpuInstancePlacement,
  ): NvmlGpuInstance {
    const profile = this.profileById(info.id);
    if (this.mig.migMode !== 1) throw new NvmlError(NVML_RETURN.ERROR_NOT_SUPPORTED, 'MIG mode is disabled');
    if (placement.size !== profile.placementSize || !profile.placements.includes(placement.start)) {
      throw new NvmlError(
        NVML_RETURN.ERROR_INVALID_ARGUMENT,
        `placement ${placement.start}:${placement.size} is not valid for ${profile.name}`,
      );
    }
    const why = refusal(this.hw.model, this.placed(), { profile, start: placement.start });
    if (why) throw new NvmlError(NVML_RETURN.ERROR_INSUFFICIENT_RESOURCES, why);
    const id = gpuInstanceId(this.hw.model.mig?.memorySlices ?? 8, placement.start, placement.size);
    this.mig.gpuInstances.push({ id, profileId: profile.id, start: placement.start, computeInstances: [] });
    this.mig.gpuInstances.sort((a, b) => a.id - b.id);
    this.nvml.commit();
    return new MockGpuInstance(this.nvml, this, id);
  }
  getGpuInstances(info: GpuInstanceProfileInfo): NvmlGpuInstance[] {
    return this.mig.gpuInstances
      .filter((gi) => gi.profileId === info.id)
      .map((gi) => new MockGpuInstance(this.nvml, this, gi.id));
  }
  getGpuInstanceById(id: number): NvmlGpuInstance {
    if (!this.mig.gpuInstances.some((gi) => gi.id === id)) {
      throw new NvmlError(NVML_RETURN.ERROR_NOT_FOUND, `no GPU instance ${id} on ${this.hw.uuid}`);
    }
    return new MockGpuInstance(this.nvml, this, id);
  }
  getMigDevices(): NvmlMigDevice[] {
    if (this.mig.migMode !== 1) return [];
    return this.mig.gpuInstances.flatMap((gi) =>
      gi.computeInstances.map((ci) => new MockMigDevice(this, gi.id, ci.id)),
    );
  }
  migState(): GpuMigState {
    return this.mig;
  }

  getSupportedEventTypes(): number {
    const unmonitored = (this.mig.faults ?? []).some((f) => f.kind === 'unmonitored');
    if (!this.hw.eventsSupported || unmonitored)
      throw new NvmlError(NVML_RETURN.ERROR_NOT_SUPPORTED, `${this.hw.uuid} reports no events`);
    return SUPPORTED_EVENTS;
  }

  registerEvents(eventTypes: number, set: NvmlEventSet): void {
    const supported = this.getSupportedEventTypes();
    if (!(set instanceof MockEventSet) || set.freed)
      throw new NvmlError(NVML_RETURN.ERROR_INVALID_ARGUMENT, 'not an event set of this NVML');
    set.masks.set(this.hw.uuid, eventTypes & supported);
    // A GPU that is still broken keeps reporting: a set registered after the fault sees it too.
    for (const f of this.mig.faults ?? []) set.deliver(this, f);
  }

  /**
   * Queries made at run time fail on a lost GPU as on real hardware. The ones the driver makes at start
   * (name, memory, PCI) keep answering, so a plugin restarted on a node with a lost GPU still starts
   * and publishes it tainted rather than crash-looping.
   */
  private alive(): void {
    if ((this.mig.faults ?? []).some((f) => f.kind === 'lost'))
      throw new NvmlError(NVML_RETURN.ERROR_GPU_IS_LOST, `${this.hw.uuid} is lost`);
  }

  getGpuFabricInfo(): GpuFabricInfo {
    const f = this.nvml.machine.fabric;
    if (!f)
      throw new NvmlError(NVML_RETURN.ERROR_NOT_SUPPORTED, `${this.hw.model.name} has no NVLink fabric`);
    return {
      clusterUuid: f.clusterUuid,
      status: 0,
      cliqueId: f.cliqueId,
      state: NVML_GPU_FABRIC_STATE.COMPLETED,
    };
  }

  getTemperature(): number {
    this.alive();
    return IDLE_TEMPERATURE_C;
  }

  getTotalEccErrors(errorType: number): bigint {
    this.alive();
    const bits = errorType === NVML_MEMORY_ERROR.UNCORRECTED ? 2 : 1;
    return BigInt(eccCount(this.mig.faults ?? [], bits));
  }

  /** A compute instance's record and its GPU instance's, or NOT_FOUND once either is destroyed. */
  computeInstance(giId: number, ciId: number): { gi: GpuInstanceState; ci: ComputeInstanceState } {
    const gi = this.mig.gpuInstances.find((x) => x.id === giId);
    const ci = gi?.computeInstances.find((x) => x.id === ciId);
    if (!gi || !ci)
      throw new NvmlError(NVML_RETURN.ERROR_NOT_FOUND, `compute instance ${giId}/${ciId} was destroyed`);
    return { gi, ci };
  }
}

type GpuInstanceState = GpuMigState['gpuInstances'][number];
type ComputeInstanceState = GpuInstanceState['computeInstances'][number];

class MockGpuInstance implements NvmlGpuInstance {
  constructor(
    private readonly nvml: MockNvml,
    private readonly device: MockDevice,
    private readonly id: number,
  ) {}

  private get gi(): GpuMigState['gpuInstances'][number] {
    const gi = this.device.migState().gpuInstances.find((x) => x.id === this.id);
    if (!gi) throw new NvmlError(NVML_RETURN.ERROR_NOT_FOUND, `GPU instance ${this.id} was destroyed`);
    return gi;
  }

  getInfo(): GpuInstanceInfo {
    const gi = this.gi;
    const p = this.device.profileById(gi.profileId);
    return { id: gi.id, profileId: gi.profileId, placement: { start: gi.start, size: p.placementSize } };
  }

  getComputeInstanceProfileInfo(profile: number, engProfile: number): ComputeInstanceProfileInfo {
    const gp = this.device.profileById(this.gi.profileId);
    const g = computeSlices(gp);
    const c = CI_PROFILE_SLICES[profile];
    if (engProfile !== 0 || c === undefined || profile >= CI_PROFILE_COUNT) {
      throw new NvmlError(
        NVML_RETURN.ERROR_INVALID_ARGUMENT,
        `compute instance profile ${profile}/${engProfile}`,
      );
    }
    const rev1 = profile === 7;
    const supported = rev1 ? gp.enumName === '1_SLICE_REV2' : c <= g && (c === g || 2 * c <= g + 1);
    if (!supported)
      throw new NvmlError(
        NVML_RETURN.ERROR_NOT_SUPPORTED,
        `compute instance profile ${profile} on ${gp.name}`,
      );
    return {
      id: profile,
      sliceCount: c,
      instanceCount: Math.floor(g / c),
      multiprocessorCount: c === g ? gp.multiprocessors : Math.floor((gp.multiprocessors / g) * c),
    };
  }

  createComputeInstance(info: ComputeInstanceProfileInfo): NvmlComputeInstance {
    const gi = this.gi;
    const used = gi.computeInstances.reduce((n, ci) => n + (CI_PROFILE_SLICES[ci.profileId] ?? 1), 0);
    const g = computeSlices(this.device.profileById(gi.profileId));
    if (used + info.sliceCount > g) {
      throw new NvmlError(
        NVML_RETURN.ERROR_INSUFFICIENT_RESOURCES,
        `GPU instance ${gi.id} has ${g - used} free compute slices`,
      );
    }
    const ids = new Set(gi.computeInstances.map((ci) => ci.id));
    let id = 0;
    while (ids.has(id)) id++;
    gi.computeInstances.push({ id, profileId: info.id });
    gi.computeInstances.sort((a, b) => a.id - b.id);
    this.nvml.commit();
    return new MockComputeInstance(this.nvml, this.device, gi.id, id);
  }

  getComputeInstances(info: ComputeInstanceProfileInfo): NvmlComputeInstance[] {
    return this.gi.computeInstances
      .filter((ci) => ci.profileId === info.id)
      .map((ci) => new MockComputeInstance(this.nvml, this.device, this.id, ci.id));
  }

  destroy(): void {
    const gi = this.gi;
    if (gi.computeInstances.length > 0) {
      throw new NvmlError(NVML_RETURN.ERROR_IN_USE, `GPU instance ${gi.id} still has compute instances`);
    }
    const list = this.device.migState().gpuInstances;
    list.splice(list.indexOf(gi), 1);
    this.nvml.commit();
  }
}

class MockComputeInstance implements NvmlComputeInstance {
  constructor(
    private readonly nvml: MockNvml,
    private readonly device: MockDevice,
    private readonly giId: number,
    private readonly id: number,
  ) {}

  getInfo(): ComputeInstanceInfo {
    const { ci } = this.device.computeInstance(this.giId, this.id);
    return { id: ci.id, profileId: ci.profileId, gpuInstanceId: this.giId };
  }

  destroy(): void {
    const { gi, ci } = this.device.computeInstance(this.giId, this.id);
    gi.computeInstances.splice(gi.computeInstances.indexOf(ci), 1);
    this.nvml.commit();
  }
}

class MockMigDevice implements NvmlMigDevice {
  constructor(
    private readonly parent: MockDevice,
    private readonly giId: number,
    private readonly ciId: number,
  ) {}

  getUUID(): string {
    const { gi } = this.parent.computeInstance(this.giId, this.ciId);
    return migUuid(this.parent.hw.uuid, gi.id, this.ciId);
  }
  getGpuInstanceId(): number {
    return this.giId;
  }
  getComputeInstanceId(): number {
    return this.ciId;
  }
  getMemoryInfo(): MemoryInfo {
    const total =
      BigInt(
        this.parent.profileById(this.parent.computeInstance(this.giId, this.ciId).gi.profileId).memoryMiB,
      ) * MiB;
    return { total, free: total, used: 0n };
  }
  getDeviceHandleFromMigDeviceHandle(): NvmlDevice {
    return this.parent;
  }
}
