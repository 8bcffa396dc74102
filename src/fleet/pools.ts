import { z } from 'zod';
import { DEFAULT_RELEASE, type DriverRelease } from '../model/device/release.js';
import type { FeatureGates } from '../model/feature-gates/gates.js';
import { checkFeatureGates, parseFeatureGates } from '../model/feature-gates/parse.js';
import { FakegpuError } from '../errors.js';
import { mergeOverPreset, parseYamlAs, type ResolvedProfile } from '../model/profile/load.js';
import { MiB, readBounded } from '../process/files.js';
import { resolveProfile } from '../process/profile-file.js';
import { nonEmpty, ProfileSpec, strict } from '../model/preset/machine-spec.js';
import { API_VERSION } from '../model/profile/schema.js';
import { renderSlices } from '../model/render.js';
import { DRIVER_NAME } from '../model/slice/build.js';
import { RACK_LABEL } from '../model/compute-domain/resource.js';

/**
 * Which machine each node pool is: the fleet's answer for nodes that carry a pool label (a cloud's
 * node-group label, Karpenter's nodepool) rather than a profile label. Read from a file, in a cluster
 * the ConfigMap the Helm chart mounts, e.g.
 *
 *   apiVersion: fakegpu.dev/v1alpha1
 *   kind: FleetPools
 *   poolLabel: karpenter.sh/nodepool
 *   rackLabel: example.com/nvl72-domain     # GB200/GB300: nodes with one value share an NVLink clique
 *   pools:
 *     h100: { profile: dgx-h100 }
 *     h100-mig: { profile: dgx-h100, dynamicMig: true }
 *     h100-lists: { profile: dgx-h100, featureGates: DRAListTypeAttributes=true }   # NVIDIA's gates, per pool
 *     custom: { spec: { preset: dgx-a100, driver: { version: 570.124.06 } } }
 *
 * Every pool is resolved when the file is read: a typo stops the fleet before it writes anything.
 */

export const POOLS_KIND = 'FleetPools';
export const DEFAULT_POOL_LABEL = 'fakegpu.dev/pool';

/** Kubernetes' node taint, as `kubectl get node -o yaml` shows it. */
const NodeTaint = strict({
  key: nonEmpty,
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
});

/**
 * The nodes of a pool, for `cluster up --kwok-pools` to create as KWOK nodes (the fleet itself serves
 * whatever nodes carry the pool label): their names, or how many (`<pool>-<i>`), with the labels and
 * taints they share. `fakegpu capture cluster` writes it.
 */
export const PoolNodes = strict({
  count: z.number().int().min(1).max(100_000).optional(),
  names: z.array(nonEmpty).min(1).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  taints: z.array(NodeTaint).optional(),
});
export type PoolNodes = z.infer<typeof PoolNodes>;

const Pool = strict({
  /** A preset name or a MachineProfile file. */
  profile: nonEmpty.optional(),
  /** A profile spec inline, as in a MachineProfile's `spec`. */
  spec: ProfileSpec.optional(),
  /** Unset: the fleet's `--dynamic-mig`. */
  dynamicMig: z.boolean().optional(),
  /** NVIDIA's gates for the pool's nodes, as `--feature-gates` takes them; unset: the fleet's. */
  featureGates: z.string().optional(),
  nodes: PoolNodes.optional(),
});

const FleetPools = strict({
  apiVersion: z.literal(API_VERSION, { error: () => `must be ${JSON.stringify(API_VERSION)}` }),
  kind: z.literal(POOLS_KIND, { error: () => `must be ${JSON.stringify(POOLS_KIND)}` }),
  poolLabel: nonEmpty.optional(),
  /** The node label naming a node's rack (NVLink domain); default fakegpu.dev/rack. */
  rackLabel: nonEmpty.optional(),
  pools: z.record(z.string(), Pool),
});

export interface PoolMachine {
  profile: ResolvedProfile;
  dynamicMig: boolean | undefined;
  gates?: FeatureGates | undefined;
  nodes: PoolNodes | undefined;
}

export interface Pools {
  label: string;
  /** Nodes with the same value share an NVLink clique (machines with NVLink fabric). */
  rackLabel: string;
  byName: ReadonlyMap<string, PoolMachine>;
}

/** `source` names the input in errors (the file); `release`: the fleet's, whose gates a pool may set. */
export function parsePools(text: string, source: string, release: DriverRelease = DEFAULT_RELEASE): Pools {
  const doc = parseYamlAs(FleetPools, text, source);
  const byName = new Map<string, PoolMachine>();
  for (const [name, p] of Object.entries(doc.pools)) {
    const field = `pools.${name}`;
    if ((p.profile === undefined) === (p.spec === undefined))
      throw new FakegpuError(field, 'give exactly one of "profile" (a preset or file) and "spec" (inline)');
    let profile: ResolvedProfile;
    if (p.profile !== undefined) profile = resolveProfile(p.profile, `${field}.profile`);
    else {
      const spec = p.spec ?? {};
      try {
        profile = { name, preset: spec.preset ?? null, spec: mergeOverPreset(spec) };
      } catch (e) {
        if (e instanceof FakegpuError) throw new FakegpuError(`${field}.${e.field}`, e.detail);
        throw e;
      }
    }
    const gates =
      p.featureGates === undefined
        ? undefined
        : parseFeatureGates(p.featureGates, release, `${field}.featureGates`);
    const dynamicMig = p.dynamicMig ?? (gates?.DynamicMIG === true ? true : undefined);
    if (gates && dynamicMig)
      checkFeatureGates({ ...gates, DynamicMIG: true }, release, `${field}.dynamicMig`);
    // Build the machine once now, so a profile that cannot be modelled fails here and not per node.
    try {
      renderSlices(profile, {
        nodeName: 'pool-check',
        dynamicMig: dynamicMig ?? false,
        driverName: DRIVER_NAME,
        kubernetesVersion: { major: 1, minor: 37, patch: 0 },
        release,
        gates,
      });
    } catch (e) {
      if (!(e instanceof FakegpuError)) throw e;
      const where = p.spec ? `${field}.${e.field}` : `${field}.profile (${p.profile ?? ''}) ${e.field}`;
      throw new FakegpuError(where, e.detail);
    }
    if (p.nodes?.count !== undefined && p.nodes.names !== undefined && p.nodes.names.length !== p.nodes.count)
      throw new FakegpuError(
        `${field}.nodes.count`,
        `${p.nodes.count}, but nodes.names lists ${p.nodes.names.length}; give one of them, or both agreeing`,
      );
    byName.set(name, { profile, dynamicMig, gates, nodes: p.nodes });
  }
  return { label: doc.poolLabel ?? DEFAULT_POOL_LABEL, rackLabel: doc.rackLabel ?? RACK_LABEL, byName };
}

export function loadPools(path: string, field = '--pools', release: DriverRelease = DEFAULT_RELEASE): Pools {
  // 100,000 node names and a spec per pool are a few MiB.
  return parsePools(readBounded(path, field, { bytes: 16 * MiB, what: 'a FleetPools file' }), path, release);
}
