import { gpuUuid, migUuid, nicMac } from '../model/hardware/identity.js';
import type { ResourceSlice } from '../kube/types/resource.js';
import type { ResolvedProfile } from '../model/profile/load.js';
import { canonicalSpec, keyOfCanonical, specKey } from '../kube/publish/pool.js';
import { renderNode, type NodeModel, type RenderOptions } from '../model/render.js';
import { gpuSkeleton, type GpuSkeleton } from '../model/health/gpus.js';

/**
 * A profile's slices rendered once, as text with holes where each node differs: its name and the
 * identities derived from it (GPU and MIG UUIDs, NIC MACs). Every node of a profile has the same
 * hardware, so filling the holes gives byte for byte what rendering that node gives, for the cost of
 * joining strings and one hash per slice, where rendering models the machine through NVML. The fleet
 * stamps thousands of nodes from a handful of templates.
 *
 * A template proves itself when made: it fills the holes for a probe node and compares the result
 * with a full render of that node. A profile whose slices depend on the node in a way the holes do
 * not capture gets no template (`make` returns null), and the fleet renders its nodes one by one.
 */

/** A node's slice, ready to send. */
export interface NodeSlice {
  driver: string;
  generateName: string;
  /** `specKey` of its spec. */
  key: string;
  /** The spec as JSON, with this pool generation. */
  spec(generation: number): string;
}

/** Rendered slices as `NodeSlice`s: for a profile without a template. */
export function nodeSlices(items: readonly ResourceSlice[]): NodeSlice[] {
  return items.map((s) => ({
    driver: s.spec.driver,
    generateName: s.metadata.generateName ?? '',
    key: specKey(s.spec),
    spec: (generation) => JSON.stringify({ ...s.spec, pool: { ...s.spec.pool, generation } }),
  }));
}

export type TemplateOptions = Omit<RenderOptions, 'nodeName' | 'migState' | 'taints'>;

/** Text pieces; a number is a hole: the node's value of that identity, or the pool generation. */
type Parts = readonly (string | number)[];

const GENERATION = -1;
/** Names no real node has, so their text cannot be mistaken for anything else in a slice. */
const TEMPLATE_NODE = 'fakegpu-template-node-zq';
const PROBE_NODE = 'fakegpu-probe-node-zq';
/** The pool generation as the template's JSON carries it, to cut a hole there. */
const GENERATION_TEXT = '"generation":1';

/** The node-derived values of one machine, in a fixed order; `of(node)` gives any other node's. */
interface Identities {
  template: string[];
  of(node: string): string[];
}

/**
 * Only identities that occur in `text` are holes: a MAC is in no slice unless NICs are published, and
 * a GPU's UUID is computed for a node only where it shows, itself or through its MIG devices.
 */
function identities(model: NodeModel, text: string): Identities {
  const { machine, nvml } = model;
  const node = machine.nodeName;
  // An identity is a hole only where it came from the node name: a UUID or MAC the profile fixes is
  // the same on every node.
  const derived = machine.gpus.filter((g) => g.uuid === gpuUuid(node, g.busId, g.model.key));
  const migs = derived.flatMap((g) =>
    nvml
      .deviceGetHandleByIndex(g.index)
      .getMigDevices()
      .map((m) => ({ g, gi: m.getGpuInstanceId(), ci: m.getComputeInstanceId(), uuid: m.getUUID() }))
      .filter((m) => text.includes(m.uuid)),
  );
  const shown = derived.filter((g) => text.includes(g.uuid));
  const needed = derived.filter((g) => shown.includes(g) || migs.some((m) => m.g === g));
  const nics = machine.nics.filter(
    (n) => n.mac !== null && n.mac === nicMac(node, n.busId) && text.includes(n.mac),
  );
  return {
    template: [
      node,
      ...shown.map((g) => g.uuid),
      ...migs.map((m) => m.uuid),
      ...nics.map((n) => n.mac ?? ''),
    ],
    of: (name) => {
      const uuids = new Map(needed.map((g) => [g, gpuUuid(name, g.busId, g.model.key)]));
      return [
        name,
        ...shown.map((g) => uuids.get(g) ?? ''),
        ...migs.map((m) => migUuid(uuids.get(m.g) ?? '', m.gi, m.ci)),
        ...nics.map((n) => nicMac(name, n.busId)),
      ];
    },
  };
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Cuts `text` at every occurrence of a token (longest first) and at the generation. */
function cut(text: string, tokens: readonly string[], generation: boolean): Parts {
  const alternatives = [...tokens].sort((a, b) => b.length - a.length).map(escape);
  if (generation) alternatives.push(escape(GENERATION_TEXT));
  const re = new RegExp(alternatives.join('|'), 'g');
  const parts: (string | number)[] = [];
  let at = 0;
  for (const m of text.matchAll(re)) {
    parts.push(text.slice(at, m.index));
    if (m[0] === GENERATION_TEXT) parts.push('"generation":', GENERATION);
    else parts.push(tokens.indexOf(m[0]));
    at = m.index + m[0].length;
  }
  parts.push(text.slice(at));
  return parts;
}

function fill(parts: Parts, values: readonly string[], generation: number): string {
  let s = '';
  for (const p of parts)
    s += typeof p === 'string' ? p : p === GENERATION ? String(generation) : (values[p] ?? '');
  return s;
}

interface SliceParts {
  driver: string;
  generateName: Parts;
  spec: Parts;
  canonical: Parts;
}

export class SliceTemplate {
  private constructor(
    private readonly slices: readonly SliceParts[],
    private readonly ids: Identities,
    /** The GPUs of any node of the profile, for faults. */
    readonly skeleton: GpuSkeleton,
  ) {}

  /** Null when the profile's slices cannot be stamped from a template (the probe differed). */
  static make(profile: ResolvedProfile, opts: TemplateOptions): SliceTemplate | null {
    const { model, items } = renderNode(profile, { ...opts, nodeName: TEMPLATE_NODE });
    const ids = identities(model, JSON.stringify(items));
    const tokens = ids.template;
    const slices = items.map((s): SliceParts => ({
      driver: s.spec.driver,
      generateName: cut(s.metadata.generateName ?? '', tokens, false),
      spec: cut(JSON.stringify(s.spec), tokens, true),
      canonical: cut(canonicalSpec(s.spec), tokens, false),
    }));
    const t = new SliceTemplate(slices, ids, gpuSkeleton(model.machine, model.devices));
    return t.proves(profile, opts) ? t : null;
  }

  private proves(profile: ResolvedProfile, opts: TemplateOptions): boolean {
    const want = renderNode(profile, { ...opts, nodeName: PROBE_NODE }).items;
    const got = this.node(PROBE_NODE);
    return (
      this.slices.every((s) => s.spec.filter((p) => p === GENERATION).length === 1) &&
      want.length === got.length &&
      want.every((w: ResourceSlice, i) => {
        const g = got[i];
        return (
          g !== undefined &&
          g.driver === w.spec.driver &&
          g.generateName === w.metadata.generateName &&
          g.spec(w.spec.pool.generation) === JSON.stringify(w.spec) &&
          g.key === keyOfCanonical(canonicalSpec(w.spec))
        );
      })
    );
  }

  /** The slices of node `name`, as rendering it would give them. */
  node(name: string): NodeSlice[] {
    const values = this.ids.of(name);
    return this.slices.map((s) => ({
      driver: s.driver,
      generateName: fill(s.generateName, values, 0),
      key: keyOfCanonical(fill(s.canonical, values, 0)),
      spec: (generation) => fill(s.spec, values, generation),
    }));
  }
}
