import { FakegpuError } from '../../errors.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
import type { Semver } from '../../kube/types/version.js';
import { DRANET } from '../../model/nic/attributes.js';
import type { ProfileSpec } from '../../model/preset/machine-spec.js';
import { DRIVER_NAME } from '../../model/slice/build.js';
import { compareNode } from './compare.js';
import type { Difference } from './diff.js';
import { machineFromSlices } from './slices.js';

/**
 * A real cluster's GPU nodes grouped into pools of one machine shape: each node's slices read back into
 * a machine (`slices.ts`), proven by rendering it and diffing with what the node published, then nodes
 * whose machines are alike — UUIDs, MACs and addresses aside, which every node derives from its own
 * name — counted together with the labels and taints they share. What cannot be derived is kept as it
 * was and reported: nodes whose render differs, and slices of drivers fakegpu does not publish.
 */

export interface ClusterNode {
  metadata: { name?: string; labels?: Record<string, string> };
  spec?: { taints?: Taint[] };
}

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface CapturedPool {
  name: string;
  spec: ProfileSpec;
  dynamicMig: boolean;
  nodes: string[];
  labels: Record<string, string>;
  taints: Taint[];
}

export interface ClusterCapture {
  pools: CapturedPool[];
  /** Nodes whose slices fakegpu cannot reproduce, with why; their slices are kept verbatim. */
  verbatim: { node: string; why: string; slices: ResourceSlice[] }[];
  /** Slices of other drivers (e.g. compute-domain.nvidia.com), kept verbatim. */
  otherDrivers: Map<string, ResourceSlice[]>;
}

/** Labels that name a node pool, in the order they are preferred as the pool's name. */
const POOL_LABELS = [
  'fakegpu.dev/pool',
  'karpenter.sh/nodepool',
  'eks.amazonaws.com/nodegroup',
  'cloud.google.com/gke-nodepool',
  'kubernetes.azure.com/agentpool',
  'node.kubernetes.io/instance-type',
  'fakegpu.dev/profile',
];

/**
 * Labels a pool does not carry: the node's own name, and fakegpu's profile label, which would name a
 * machine over the pool's own (the pool's spec is the machine now).
 */
const NODE_OWN_LABELS = new Set(['kubernetes.io/hostname', 'fakegpu.dev/profile']);
const TRANSIENT_TAINT = /^node\.(kubernetes\.io|cloudprovider\.kubernetes\.io)\//;

/** What a pool's nodes share: derived identities left out. */
function shapeOf(spec: ProfileSpec): ProfileSpec {
  return {
    ...spec,
    gpus: (spec.gpus ?? []).map(({ uuid: _uuid, ...g }) => g),
    ...(spec.nics ? { nics: spec.nics.map(({ mac: _mac, ipv4: _ipv4, ...n }) => n) } : {}),
  };
}

function common<T>(lists: readonly T[][], key: (t: T) => string): T[] {
  const [first = [], ...rest] = lists;
  return first.filter((t) => rest.every((l) => l.some((u) => key(u) === key(t))));
}

const safeName = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63) || 'pool';

/**
 * The most devices of fakegpu's drivers one node may show: 255 GPUs under dynamic MIG publish 6,630
 * (26 a GPU), and NICs a few more. A node past it is no real node, and reading it back and rendering
 * it to compare would take minutes and gigabytes.
 */
export const MAX_NODE_DEVICES = 8192;

function checkNodeSize(name: string, slices: readonly ResourceSlice[]): void {
  const count = slices.reduce((n, s) => n + (s.spec.devices?.length ?? 0), 0);
  if (count > MAX_NODE_DEVICES)
    throw new FakegpuError(
      `node ${name}`,
      `${count} devices of ${DRIVER_NAME} and ${DRANET}; a node has at most ${MAX_NODE_DEVICES} (255 GPUs with dynamic MIG publish 6630)`,
    );
}

export function captureCluster(
  nodes: readonly ClusterNode[],
  slices: readonly ResourceSlice[],
  kubernetesVersion: Semver,
): ClusterCapture {
  const byNode = new Map<string, ResourceSlice[]>();
  const otherDrivers = new Map<string, ResourceSlice[]>();
  // Appended in place: copying the list for each slice was quadratic in a driver's or node's slices.
  const add = (m: Map<string, ResourceSlice[]>, key: string, s: ResourceSlice): void => {
    const list = m.get(key);
    if (list) list.push(s);
    else m.set(key, [s]);
  };
  for (const s of slices) {
    const driver = s.spec.driver;
    if (driver !== DRIVER_NAME && driver !== DRANET) {
      add(otherDrivers, driver, s);
      continue;
    }
    if (!s.spec.nodeName) continue;
    add(byNode, s.spec.nodeName, s);
  }
  for (const [name, mine] of byNode) checkNodeSize(name, mine);
  const nodeByName = new Map(nodes.map((n) => [n.metadata.name ?? '', n]));
  const shapes = new Map<string, { spec: ProfileSpec; dynamicMig: boolean; nodes: ClusterNode[] }>();
  const verbatim: ClusterCapture['verbatim'] = [];
  for (const [name, mine] of [...byNode].sort(([a], [b]) => a.localeCompare(b))) {
    if (!mine.some((s) => s.spec.driver === DRIVER_NAME)) continue;
    const node = nodeByName.get(name) ?? { metadata: { name } };
    let why: string | undefined;
    let machine: ReturnType<typeof machineFromSlices> | undefined;
    try {
      machine = machineFromSlices(name, mine);
      const r = compareNode({ name, preset: null, spec: machine.spec }, mine, {
        node: name,
        kubernetesVersion,
        ignore: new Set(),
      });
      if (r.differences.length > 0) why = describe(r.differences);
    } catch (e) {
      if (!(e instanceof FakegpuError)) throw e;
      why = e.message;
    }
    if (why !== undefined || machine === undefined) {
      verbatim.push({ node: name, why: why ?? 'unreadable', slices: mine });
      continue;
    }
    const spec = shapeOf(machine.spec);
    const key = JSON.stringify([spec, machine.dynamicMig]);
    const shape = shapes.get(key) ?? { spec, dynamicMig: machine.dynamicMig, nodes: [] };
    shape.nodes.push(node);
    shapes.set(key, shape);
  }
  const used = new Set<string>();
  const pools: CapturedPool[] = [...shapes.values()].map((shape, i) => {
    const shared = common(
      shape.nodes.map((n) => Object.entries(n.metadata.labels ?? {})),
      ([k, v]) => `${k}=${v}`,
    );
    const labels = shared.filter(([k]) => !NODE_OWN_LABELS.has(k));
    const poolLabel = POOL_LABELS.find((l) => shared.some(([k]) => k === l));
    const base = safeName(poolLabel ? (shared.find(([k]) => k === poolLabel)?.[1] ?? '') : `pool-${i}`);
    let name = base;
    for (let n = 2; used.has(name); n++) name = `${base}-${n}`;
    used.add(name);
    return {
      name,
      spec: shape.spec,
      dynamicMig: shape.dynamicMig,
      nodes: shape.nodes.map((n) => n.metadata.name ?? ''),
      labels: Object.fromEntries(labels),
      taints: common(
        shape.nodes.map((n) => (n.spec?.taints ?? []).filter((t) => !TRANSIENT_TAINT.test(t.key))),
        (t) => `${t.key}=${t.value ?? ''}:${t.effect}`,
      ).map((t) => ({ key: t.key, ...(t.value === undefined ? {} : { value: t.value }), effect: t.effect })),
    };
  });
  return { pools, verbatim, otherDrivers };
}

function describe(differences: readonly Difference[]): string {
  const [first] = differences;
  const more = differences.length > 1 ? ` and ${differences.length - 1} more` : '';
  return first ? `${first.where}: ${first.field} differs${more}` : 'differs';
}
