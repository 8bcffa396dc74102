import type { Logger } from 'pino';
import type { DriverRelease } from '../model/device/release.js';
import { defaultGates, type FeatureGates } from '../model/feature-gates/gates.js';
import type { ConsumableShares } from '../model/device/consumable-shares.js';
import { formatFeatureGates } from '../model/feature-gates/parse.js';

/** What a node is: its machine, whether it runs dynamic MIG, and its pool's gates (absent: the fleet's). */
interface MachineRef {
  profile: ResolvedProfile;
  dynamicMig: boolean;
  gates?: FeatureGates | undefined;
}
import { FakegpuError, oneOf, show } from '../errors.js';
import type { Semver } from '../kube/types/version.js';
import type { Device } from '../kube/types/resource.js';
import { type ResolvedProfile } from '../model/profile/load.js';
import { resolveProfile } from '../process/profile-file.js';
import type { DeviceTaints } from '../model/health/taints.js';
import { RACK_LABEL } from '../model/compute-domain/resource.js';
import { cliqueOf } from '../model/device/clique.js';
import { buildMachine, nodeFabric } from '../model/hardware/build.js';
import { INSTANCE_TYPE_LABEL, presetForInstanceType } from '../model/preset/index.js';
import type { GatedField } from '../kube/publish/gates.js';
import { hasNvlinkFabric, renderNode, renderSlices, type NicRenderOptions } from '../model/render.js';
import type { Machine } from '../model/hardware/machine.js';
import { gpuSkeleton, type NodeGpu } from '../model/health/gpus.js';
import { taintSlices } from './health.js';
import type { Pools } from './pools.js';
import { nodeSlices, SliceTemplate, type NodeSlice } from './template.js';

/** One driver's devices of a node. */
export interface DriverDevices {
  driver: string;
  devices: readonly Device[];
}

/** Where a node's machine comes from: its profile label, else its pool, else the default profile. */
export interface NodeMachine {
  /** From the profile label, else (with no pool) the default profile. */
  profile: string | null;
  /** From the pools' label, when the profile label is absent. */
  pool: string | null;
  /** From `node.kubernetes.io/instance-type`, when neither label is there. */
  instanceType?: string | null;
  labels?: Record<string, string>;
}

export interface MachineOptions {
  profileLabel: string;
  pools?: Pools | undefined;
  dynamicMig: boolean;
  driverName: string;
  release: DriverRelease;
  /** NVIDIA's gates, resolved; a pool's `dynamicMig` overrides DynamicMIG. */
  gates?: FeatureGates | undefined;
  /** `--consumable-shares`, checked against the gates; absent: disabled. */
  consumableShares?: ConsumableShares | undefined;
  nics?: NicRenderOptions | undefined;
  /** Publish NVIDIA's compute-domain slice on nodes with NVLink fabric. */
  computeDomains?: boolean | undefined;
  log: Logger;
}

/** Profile labels whose devices `devicesOf` keeps answered. */
const MEMO_PROFILES = 256;

/**
 * The slices each node should have. Each profile is resolved once and rendered once as a template
 * (`template.ts`) that is stamped per node; a profile without one is rendered node by node.
 */
export class Machines {
  private readonly profiles = new Map<string, ResolvedProfile | FakegpuError>();
  /** By profile: whether its machine has an NVLink fabric. */
  private readonly fabric = new Map<ResolvedProfile, boolean>();
  /** By profile, then gates (DynamicMIG among them); null: the profile has no template, its nodes are rendered. */
  private readonly templates = new Map<ResolvedProfile, Map<string, SliceTemplate | null>>();
  /** By profile, then gates: its devices by driver, as a stand-in node publishes them (the scorecard). */
  private readonly devicesBy = new Map<ResolvedProfile, Map<string, DriverDevices[] | null>>();
  /** By profile: its machine as modelled for a stand-in node, for the GPU metrics of its nodes. */
  private readonly hardwareOf = new Map<ResolvedProfile, Machine | null>();
  /** The node label naming a node's rack (NVLink domain). */
  readonly rackLabel: string;
  /** The API server's version decides the slice layout under dynamic MIG, as in the node plugin. */
  kubernetesVersion: Semver = { major: 1, minor: 37, patch: 0 };
  /** Fields the API server drops (their gate off): left out, dynamic MIG degraded to whole GPUs. */
  gatesOff: ReadonlySet<GatedField> = new Set();
  /** `devicesOf` by profile label, for the fields off it was made under (`devicesBy` keys the rest). */
  private devicesMemo: {
    gatesOff: ReadonlySet<GatedField>;
    byProfile: Map<string, readonly DriverDevices[] | null>;
  } = { gatesOff: this.gatesOff, byProfile: new Map() };

  constructor(private readonly o: MachineOptions) {
    this.rackLabel = o.pools?.rackLabel ?? RACK_LABEL;
  }

  /**
   * The clique NVIDIA's compute-domain plugin would read on the node (`<clusterUUID>.<cliqueId>`, from
   * its profile's fabric and its rack label); null: no NVLink fabric.
   */
  clique(node: string, st: NodeMachine): string | null {
    const m = this.machineOf(st);
    if (m === null || m instanceof FakegpuError) return null;
    let fabric = this.fabric.get(m.profile);
    if (fabric === undefined) {
      try {
        fabric = hasNvlinkFabric(m.profile);
      } catch {
        fabric = false;
      }
      this.fabric.set(m.profile, fabric);
    }
    if (!fabric) return null;
    return cliqueOf(nodeFabric(m.profile.spec.fabric, node, st.labels?.[this.rackLabel]));
  }

  /**
   * The node's slices, of every driver (the compute-domain one as `renderNode` decides), with the taints
   * of its faulted devices; an error: the node's machine cannot be rendered.
   */
  desired(node: string, st: NodeMachine, asked?: DeviceTaints): NodeSlice[] | FakegpuError {
    const m = this.machineOf(st);
    if (m === null) return [];
    if (m instanceof FakegpuError) return m;
    const taints = this.gatesOff.has('taints') ? undefined : asked;
    try {
      const t = this.templateOf(m);
      if (t) {
        const slices = t.node(node);
        if (taints === undefined || taints.size === 0) return slices;
        const tainted = taintSlices(slices, taints, this.o.release);
        if (tainted) return tainted;
      }
      // No template, or taints that change the layout: the node is rendered as its plugin would.
      return nodeSlices(renderSlices(m.profile, { ...this.options(m), nodeName: node, taints }).items);
    } catch (e) {
      return e instanceof FakegpuError ? e : new FakegpuError(node, String(e));
    }
  }

  /**
   * The node's GPUs as faults see them; null where the node has no machine, or runs dynamic MIG (which
   * NVIDIA's health monitor refuses to run with).
   */
  gpus(node: string, st: NodeMachine): NodeGpu[] | null {
    const m = this.machineOf(st);
    if (m === null || m instanceof FakegpuError || m.dynamicMig) return null;
    try {
      const t = this.templateOf(m);
      if (t) return t.skeleton.gpus(node);
      const { model } = renderNode(m.profile, { ...this.options(m), nodeName: node });
      return gpuSkeleton(model.machine, model.devices).gpus(node);
    } catch {
      return null;
    }
  }

  /**
   * The devices any node of the node's machine publishes, by driver: names, attributes, capacities and
   * counters as in its slices, identities a stand-in node's (the scorecard keys GPUs by node, so they need
   * not be the node's own). Null: the node has no machine, or it cannot be rendered.
   */
  devicesOf(st: NodeMachine): readonly DriverDevices[] | null {
    // The common node, a profile label and no pool, from a map: the scorecard asks for every node each
    // time it is worked out, and the way below makes a handful of objects per node.
    const label = st.pool === null || !this.o.pools ? st.profile : null;
    if (label === null) return this.devicesOfMachine(st);
    let memo = this.devicesMemo;
    if (memo.gatesOff !== this.gatesOff)
      this.devicesMemo = memo = { gatesOff: this.gatesOff, byProfile: new Map() };
    let out = memo.byProfile.get(label);
    if (out === undefined) {
      out = this.devicesOfMachine(st);
      // Labels are anyone's to write: past MEMO_PROFILES, answered the long way.
      if (memo.byProfile.size < MEMO_PROFILES) memo.byProfile.set(label, out);
    }
    return out;
  }

  private devicesOfMachine(st: NodeMachine): readonly DriverDevices[] | null {
    const m = this.machineOf(st);
    if (m === null || m instanceof FakegpuError) return null;
    let byMode = this.devicesBy.get(m.profile);
    if (!byMode) this.devicesBy.set(m.profile, (byMode = new Map<string, DriverDevices[] | null>()));
    const options = this.options(m);
    const mode = formatFeatureGates(options.gates);
    let out = byMode.get(mode);
    if (out === undefined) {
      try {
        out = renderNode(m.profile, { ...options, nodeName: 'fakegpu-scorecard-node' }).items.map((s) => ({
          driver: s.spec.driver,
          devices: s.spec.devices ?? [],
        }));
      } catch {
        out = null;
      }
      byMode.set(mode, out);
    }
    return out;
  }

  /**
   * The node's machine as modelled for any node of its profile (identities derived from the node name
   * are the caller's to derive again), and whether it runs dynamic MIG; null: the node has none.
   */
  hardware(st: NodeMachine): { machine: Machine; dynamicMig: boolean } | null {
    const m = this.machineOf(st);
    if (m === null || m instanceof FakegpuError) return null;
    let machine = this.hardwareOf.get(m.profile);
    if (machine === undefined) {
      try {
        machine = buildMachine(m.profile, { nodeName: 'fakegpu-hardware-node', dynamicMig: m.dynamicMig });
      } catch {
        machine = null;
      }
      this.hardwareOf.set(m.profile, machine);
    }
    return machine ? { machine, dynamicMig: m.dynamicMig } : null;
  }

  private options(m: MachineRef) {
    return {
      dynamicMig: m.dynamicMig,
      driverName: this.o.driverName,
      kubernetesVersion: this.kubernetesVersion,
      release: this.o.release,
      gates: this.gates(m),
      // A server that drops allowMultipleAllocations cannot share a device: published unshared.
      consumableShares: this.gatesOff.has('allowMultipleAllocations') ? undefined : this.o.consumableShares,
      nics: this.o.nics,
      computeDomains: this.o.computeDomains,
    };
  }

  private templateOf(m: MachineRef): SliceTemplate | null {
    let byMode = this.templates.get(m.profile);
    if (!byMode) this.templates.set(m.profile, (byMode = new Map<string, SliceTemplate | null>()));
    const options = this.options(m);
    // Pools of one profile may differ in their gates: one template per set of them.
    const mode = formatFeatureGates(options.gates);
    let t = byMode.get(mode);
    if (t === undefined) {
      t = SliceTemplate.make(m.profile, options);
      byMode.set(mode, t);
      if (!t)
        this.o.log.info(
          { profile: m.profile.name },
          'no slice template for the profile; rendering each node',
        );
    }
    return t;
  }

  private profileOf(ref: string): ResolvedProfile | FakegpuError {
    let p = this.profiles.get(ref);
    if (!p) {
      try {
        p = resolveProfile(ref, `node label ${this.o.profileLabel}`);
      } catch (e) {
        p = e instanceof FakegpuError ? e : new FakegpuError(ref, String(e));
      }
      this.profiles.set(ref, p);
    }
    return p;
  }

  /** The node's machine and whether it runs dynamic MIG; null: the node has none. */
  private machineOf(st: NodeMachine): MachineRef | FakegpuError | null {
    if (st.pool !== null && this.o.pools) {
      const m = this.o.pools.byName.get(st.pool);
      if (!m)
        return new FakegpuError(
          `node label ${this.o.pools.label}`,
          `unknown pool ${show(st.pool)}; pools: ${oneOf([...this.o.pools.byName.keys()])}`,
        );
      return {
        profile: m.profile,
        dynamicMig: this.dynamicMig(m.dynamicMig ?? this.o.dynamicMig),
        gates: m.gates,
      };
    }
    let ref = st.profile;
    if (ref === null && st.instanceType) {
      try {
        ref = presetForInstanceType(st.instanceType, `node label ${INSTANCE_TYPE_LABEL}`).name;
      } catch (e) {
        if (e instanceof FakegpuError) return e;
        throw e;
      }
    }
    if (ref === null) return null;
    const profile = this.profileOf(ref);
    return profile instanceof FakegpuError
      ? profile
      : { profile, dynamicMig: this.dynamicMig(this.o.dynamicMig) };
  }

  /** A pool's gates, else the fleet's; lists only where the server keeps them. */
  private gates(m: MachineRef): FeatureGates {
    const g = m.gates ?? this.o.gates ?? defaultGates();
    const lists = g.DRAListTypeAttributes && !this.gatesOff.has('listAttributes');
    return { ...g, DynamicMIG: m.dynamicMig, DRAListTypeAttributes: lists };
  }

  /** Dynamic MIG only where the server keeps counters. */
  private dynamicMig(asked: boolean): boolean {
    return asked && !this.gatesOff.has('sharedCounters') && !this.gatesOff.has('consumesCounters');
  }
}
