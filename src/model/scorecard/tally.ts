import type { ResourceClaim } from '../../kube/types/claim.js';
import type { Device } from '../../kube/types/resource.js';
import { GPU_CLIQUE_LABEL } from '../compute-domain/resource.js';
import { DRIVER_NAME } from '../slice/build.js';
import { claimQuality, type HeldDevice } from './claims.js';
import { binding, factsOf } from './devices.js';
import { emptyFigures, POOL_LABELS, round, Scopes, type Figures, type Scorecard } from './figures.js';
import { GpuTally, type GpuState } from './gpus.js';
import {
  evicted,
  type DeviceTaintRuleView,
  type NodeView,
  type PodView,
  type SliceView,
} from './inventory.js';

/** The figures one node's GPUs, the claims counted on it and its evicted pods add to each scope it is in. */
const SUMMED = [
  'gpus',
  'allocated',
  'free',
  'tainted',
  'migFreeSlices',
  'migStrandedSlices',
  'gpuNicClaims',
  'gpuNicAligned',
  'multiGpuClaims',
  'multiGpuCrossNuma',
  'claimsOnTainted',
  'podsEvicted',
] as const;

type NodeSums = Pick<Figures, (typeof SUMMED)[number]>;

/** What a node's GPUs add to its sums. */
function addGpus(s: NodeSums, states: ReadonlyMap<string, GpuState>): void {
  states.forEach((st) => {
    s.gpus++;
    if (st.allocated) s.allocated++;
    else if (!st.tainted) s.free++;
    if (st.tainted) s.tainted++;
    s.migFreeSlices += st.migFreeSlices;
    s.migStrandedSlices += st.migStrandedSlices;
  });
}

/** An allocated claim some of whose devices are found, its results in order. */
interface OpenClaim {
  claim: ResourceClaim;
  /** Its place in the order claims came. */
  order: number;
  held: (HeldDevice | undefined)[];
  missing: number;
}

/**
 * Results of one claim told apart in `wantedIn`'s numbers; the API server allows 32
 * (AllocationResultsMaxSize), so none is ever past it.
 */
const MAX_RESULTS = 1024;

/** A node closed (`ScoreTally.gpus`). */
const CLOSED: readonly Device[] = Object.freeze([]);

const PLAIN = new WeakMap<readonly Device[], Plain>();

/**
 * Device lists met before: only a list met a second time is taken as a machine's, shared by its nodes.
 * One met once (each page of `fakegpu report` is a fresh one) is folded at once, as any other, so that
 * no listed slice is kept for its node past its page.
 */
const SEEN = new WeakSet<readonly Device[]>();

interface Plain {
  states: ReadonlyMap<string, GpuState>;
  /** The sums of a node with these GPUs and nothing else: frozen, copied by `sumsOf` before adding. */
  sums: NodeSums;
}

/** The GPU of that name among a node's open GPUs, opened if it is not yet. */
function tallyOf(onNode: Map<string, GpuTally>, gpu: string): GpuTally {
  let g = onNode.get(gpu);
  if (!g) onNode.set(gpu, (g = new GpuTally()));
  return g;
}

/** Devices no claim holds and no rule taints, into a node's open GPUs. */
function foldPlain(onNode: Map<string, GpuTally>, devices: readonly Device[]): void {
  for (const d of devices) {
    const f = factsOf(d);
    if (f.gpu !== undefined) tallyOf(onNode, f.gpu).add(f, false, f.tainted);
  }
}

function statesOf(onNode: ReadonlyMap<string, GpuTally>): Map<string, GpuState> {
  const states = new Map<string, GpuState>();
  onNode.forEach((g, gpu) => states.set(gpu, g.state()));
  return states;
}

/**
 * The GPUs of a list of devices none of which any claim holds or any rule taints, worked out once per
 * list: a fleet hands every node of a machine the same list, so that a scorecard of 50,000 idle nodes
 * folds one node's devices, not 400,000 GPUs' worth of garbage each time it is worked out (issue 50).
 */
function plainGpus(devices: readonly Device[]): Plain {
  let out = PLAIN.get(devices);
  if (out === undefined) {
    const onNode = new Map<string, GpuTally>();
    foldPlain(onNode, devices);
    const states = statesOf(onNode);
    states.forEach((st) => Object.freeze(st));
    const sums: NodeSums = emptyFigures();
    addGpus(sums, states);
    PLAIN.set(devices, (out = { states, sums: Object.freeze(sums) }));
  }
  return out;
}

function ruleHits(r: DeviceTaintRuleView, driver: string, pool: string, device: string): boolean {
  const s = r.spec.deviceSelector ?? {};
  return (
    (s.driver === undefined || s.driver === driver) &&
    (s.pool === undefined || s.pool === pool) &&
    (s.device === undefined || s.device === device)
  );
}

/**
 * The scorecard (docs/scorecard.md) folded as the cluster is read, so that no one holds the cluster
 * whole: `fakegpu report` page by page, the fleet node by node between turns of its event loop. Claims
 * come first (a device is folded once, knowing whether a claim holds it); nodes, slices and pods in any
 * order after. A node's GPUs are worked out when it is closed, or at `finish`; a claim once every device
 * it names is seen, or at `finish`. What is kept meanwhile: the claims' wanted devices, one small sum per
 * node, the open GPUs, and the nodes' labels as given.
 */
export class ScoreTally {
  private readonly gpuDriver: string;
  private readonly rules: readonly DeviceTaintRuleView[];
  /** Allocated claims in the order they came; null once counted. */
  private readonly claims: (ResourceClaim | null)[] = [];
  /** By pool: the claims (their places in `claims`) with results in it; those counted are null there. */
  private readonly byPool = new Map<string, number | number[]>();
  /** Claims some of whose devices are found, by place. */
  private readonly open = new Map<number, OpenClaim>();
  private devicesSeen = false;
  /**
   * Each node's GPUs, in the order nodes were first seen: open, by the node's name for each GPU; or,
   * while its one GPU pool so far is plain (no claim holds it, no rule taints it), that pool's devices,
   * its GPUs then `plainGpus`; or CLOSED. Closed nodes are marked, not deleted: a map emptied and
   * filled 50,000 times reallocates its table as it goes.
   */
  private readonly gpus = new Map<string, Map<string, GpuTally> | readonly Device[]>();
  /** Each node's sums; a plain node's are its machine's (`Plain.sums`, frozen) until `sumsOf` copies them. */
  private readonly sums = new Map<string, NodeSums>();
  private readonly labels = new Map<string, Readonly<Record<string, string>>>();
  /** Each domain's first claim (by claim order), its node, and every node its channels are on. */
  private readonly domains = new Map<string, { order: number; node: string; nodes: Set<string> }>();

  constructor(o: { gpuDriver?: string; taintRules?: readonly DeviceTaintRuleView[] } = {}) {
    this.gpuDriver = o.gpuDriver ?? DRIVER_NAME;
    this.rules = (o.taintRules ?? []).filter((r) => binding(r.spec.taint));
  }

  addClaim(claim: ResourceClaim): void {
    if (this.devicesSeen) throw new Error('ScoreTally: a claim after devices would miss what they hold');
    const results = claim.status?.allocation?.devices?.results ?? [];
    if (results.length === 0) return;
    const at = this.claims.push(claim) - 1;
    for (const { pool } of results) {
      const l = this.byPool.get(pool);
      if (l === undefined) this.byPool.set(pool, at);
      else if (l === at || (typeof l !== 'number' && l.at(-1) === at)) continue;
      else if (typeof l === 'number') this.byPool.set(pool, [l, at]);
      else l.push(at);
    }
  }

  addNode(n: NodeView): void {
    this.labels.set(n.metadata.name, n.metadata.labels ?? {});
  }

  addSlice(s: SliceView): void {
    this.addDevices(s.spec.driver, s.spec.pool.name, s.spec.nodeName, s.spec.devices ?? []);
  }

  /** A pool's devices on a node: a GPU driver's go to their physical GPU, any claim's to the claim. */
  addDevices(driver: string, pool: string, node: string, devices: readonly Device[]): void {
    this.devicesSeen = true;
    const isGpu = driver === this.gpuDriver;
    const wanted = this.wantedIn(driver, pool);
    if (wanted === undefined && this.rules.length === 0) {
      // Held by no claim and no GPU: nothing of it counts.
      if (!isGpu) return;
      const cur = this.gpus.get(node);
      if ((cur === undefined || cur === CLOSED) && SEEN.has(devices)) {
        this.gpus.set(node, devices);
        return;
      }
      SEEN.add(devices);
    }
    this.fold(driver, pool, node, devices, isGpu, wanted);
  }

  /** The node's open GPUs; a plain pool it had is folded into them first, as any other. */
  private openGpus(node: string): Map<string, GpuTally> {
    const cur = this.gpus.get(node);
    if (cur instanceof Map) return cur;
    const onNode = new Map<string, GpuTally>();
    this.gpus.set(node, onNode);
    if (cur !== undefined) foldPlain(onNode, cur);
    return onNode;
  }

  private fold(
    driver: string,
    pool: string,
    node: string,
    devices: readonly Device[],
    isGpu: boolean,
    wanted: Map<string, number[]> | undefined,
  ): void {
    let onNode: Map<string, GpuTally> | undefined;
    for (const d of devices) {
      const f = factsOf(d);
      const tainted =
        f.tainted || (this.rules.length > 0 && this.rules.some((r) => ruleHits(r, driver, pool, d.name)));
      const gpu = isGpu ? f.gpu : undefined;
      const wants = wanted?.get(d.name);
      if (wants) {
        const h: HeldDevice = {
          driver,
          node,
          gpu: gpu === undefined ? null : `${node}/${gpu}`,
          pcieRoot: f.pcieRoot,
          numa: f.numa,
          tainted,
        };
        for (const w of wants) this.found(Math.floor(w / MAX_RESULTS), w % MAX_RESULTS, h);
      }
      if (gpu === undefined) continue;
      onNode ??= this.openGpus(node);
      tallyOf(onNode, gpu).add(f, wants !== undefined, tainted);
    }
  }

  /**
   * The results of claims not yet counted that name a device of this driver's pool, by device: each as
   * `claim * MAX_RESULTS + result`, one number, not a pair (at 400,000 claims, pairs are garbage that counts).
   */
  private wantedIn(driver: string, pool: string): Map<string, number[]> | undefined {
    const refs = this.byPool.get(pool);
    if (refs === undefined) return undefined;
    const out = new Map<string, number[]>();
    const add = (i: number): void => {
      const results = this.claims[i]?.status?.allocation?.devices?.results ?? [];
      for (let at = 0; at < results.length && at < MAX_RESULTS; at++) {
        const r = results[at];
        if (r === undefined || r.pool !== pool || r.driver !== driver) continue;
        const l = out.get(r.device);
        if (l) l.push(i * MAX_RESULTS + at);
        else out.set(r.device, [i * MAX_RESULTS + at]);
      }
    };
    if (typeof refs === 'number') add(refs);
    else for (const i of refs) add(i);
    return out;
  }

  /**
   * Every device of the node is in: its GPUs' states, by the node's name for each, in order seen. Not
   * to be changed: a node whose GPUs no claim holds shares its machine's.
   */
  closeNode(node: string): ReadonlyMap<string, GpuState> {
    const cur = this.gpus.get(node);
    if (cur === undefined || cur === CLOSED) return new Map();
    this.gpus.set(node, CLOSED);
    if (cur instanceof Map) {
      const states = statesOf(cur);
      addGpus(this.sumsOf(node), states);
      return states;
    }
    const p = plainGpus(cur);
    // No GPUs, no sums: a node without any is in no scope.
    if (p.states.size === 0) return p.states;
    if (this.sums.has(node)) addGpus(this.sumsOf(node), p.states);
    else this.sums.set(node, p.sums);
    return p.states;
  }

  addPod(p: PodView): void {
    if (evicted(p)) this.sumsOf(p.spec?.nodeName ?? '').podsEvicted++;
  }

  /** The scorecard; `poolLabel` names the pool label, else the first of POOL_LABELS any node has. */
  finish(poolLabel?: string): Scorecard {
    const steps = this.finishing(poolLabel);
    for (;;) {
      const r = steps.next();
      if (r.done) return r.value;
    }
  }

  /** `finish` in steps of `every` nodes, for a caller that lets its event loop turn between them. */
  *finishing(poolLabel?: string, every = 2000): Generator<void, Scorecard> {
    for (const c of [...this.open.values()]) this.complete(c);
    this.byPool.clear();
    // Index loops over arrays of names: in a generator, an iterator's results and entries are garbage
    // per node.
    const open: string[] = [];
    this.gpus.forEach((g, node) => {
      if (g !== CLOSED) open.push(node);
    });
    for (let i = 0; i < open.length; i++) {
      this.closeNode(open[i] ?? '');
      if ((i + 1) % every === 0) yield;
    }
    let label: string | null = poolLabel ?? null;
    if (poolLabel === undefined)
      for (const l of POOL_LABELS) {
        if (anyHas(this.labels, l)) {
          label = l;
          break;
        }
        yield;
      }
    const scopes = new Scopes(this.labels, label);
    const nodes = [...this.sums.keys()];
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i] ?? '';
      const s = this.sums.get(node);
      if (s) for (const f of scopes.of(node)) addSums(f, s);
      if ((i + 1) % every === 0) yield;
    }
    for (const d of this.domains.values()) {
      const cliques = new Set([...d.nodes].map((x) => this.labels.get(x)?.[GPU_CLIQUE_LABEL] ?? ''));
      for (const f of scopes.of(d.node)) {
        f.computeDomains++;
        if (cliques.size > 1) f.computeDomainsSplit++;
      }
    }
    for (const f of scopes.all()) f.fragmentation = f.free === 0 ? 0 : round(f.strandedGpus / f.free);
    return { cluster: scopes.cluster, pools: scopes.pools, racks: scopes.racks, poolLabel: label };
  }

  private sumsOf(node: string): NodeSums {
    let s = this.sums.get(node);
    // Set again, not deleted and added: the scopes come out in the order nodes were first summed.
    if (s === undefined || Object.isFrozen(s)) this.sums.set(node, (s = { ...(s ?? emptyFigures()) }));
    return s;
  }

  private found(i: number, at: number, h: HeldDevice): void {
    let c = this.open.get(i);
    if (c === undefined) {
      const claim = this.claims[i];
      if (!claim) return;
      const missing = claim.status?.allocation?.devices?.results?.length ?? 0;
      // Most claims hold one device: counted at once, never kept open.
      if (missing === 1) {
        this.complete({ claim, order: i, held: [h], missing: 0 });
        return;
      }
      this.open.set(i, (c = { claim, order: i, held: [], missing }));
    }
    if (c.held[at] !== undefined) return;
    c.held[at] = h;
    if (--c.missing === 0) this.complete(c);
  }

  /** A claim counts on the node of its first device found; one with none found counts nowhere. */
  private complete(c: OpenClaim): void {
    this.open.delete(c.order);
    // Its pools' entries stay till `finish`: a pool many claims share would make removing them quadratic.
    this.claims[c.order] = null;
    const held =
      c.missing === 0 ? (c.held as HeldDevice[]) : c.held.filter((h): h is HeldDevice => h !== undefined);
    if (held.length === 0) return;
    const q = claimQuality(c.claim, held);
    const s = this.sumsOf(q.node);
    if (q.gpuNic) s.gpuNicClaims++;
    if (q.gpuNicAligned) s.gpuNicAligned++;
    if (q.multiGpu) s.multiGpuClaims++;
    if (q.crossNuma) s.multiGpuCrossNuma++;
    if (q.onTainted) s.claimsOnTainted++;
    if (q.domain === null) return;
    const d = this.domains.get(q.domain);
    if (!d) this.domains.set(q.domain, { order: c.order, node: q.node, nodes: new Set([q.node]) });
    else {
      d.nodes.add(q.node);
      if (c.order < d.order) Object.assign(d, { order: c.order, node: q.node });
    }
  }
}

/** Whether any node has the label. */
function anyHas(labels: ReadonlyMap<string, Readonly<Record<string, string>>>, label: string): boolean {
  for (const l of labels.values()) if (label in l) return true;
  return false;
}

/** A node's sums into a scope, and the node itself: full, partly used or empty, by its GPUs. */
function addSums(f: Figures, s: Readonly<NodeSums>): void {
  for (const k of SUMMED) f[k] += s[k];
  if (s.gpus === 0) return;
  f.nodes++;
  if (s.allocated === 0) f.nodesEmpty++;
  else if (s.free === 0) f.nodesFull++;
  else {
    f.nodesPartial++;
    f.strandedGpus += s.free;
  }
}
