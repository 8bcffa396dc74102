import { FAULT_LIMITS, type Condition, type GpuFault, type NodeFaultStatus } from './resource.js';

/**
 * JSON merge patches (RFC 7386) of a GpuFault's status, for `PATCH .../gpufaults/<name>/status` with
 * `application/merge-patch+json`. Pure: the caller holds the object and does the I/O.
 *
 * The status stays small however many nodes a fault hits. Each writer (a node's plugin; a fleet for
 * all its nodes) owns one entry under `status.writers` with its counts, and the entries of some of its
 * nodes under `status.nodes`: a plugin its own node, a fleet the first `LISTED_NODES` by name with at
 * most `LISTED_DEVICES` devices among them. A writer always writes its whole count (it knows all its
 * nodes), never an increment, so it owns its keys outright: writers never conflict, a restarted one
 * writes the same numbers again, and no write needs a resourceVersion. Counters shared by writers
 * instead would need read-modify-write with resourceVersions, and a writer that restarted could not
 * tell what it had already added. The totals (`hits`, `nodesHit`, `unlistedNodes`) are the writers'
 * sums, written by one of them (`summaryPatch`).
 */

/** A node entry as sent: optional fields a writer leaves out are null, so a merge removes stale ones. */
export interface NodeEntryPatch {
  devices: NodeFaultStatus['devices'];
  unlisted: number | null;
  message: string | null;
  observedGeneration: number;
}

export interface WriterEntryPatch {
  nodes: number;
  devices: number;
  unlistedNodes: number | null;
}

export interface StatusPatch {
  status: {
    nodes?: Record<string, NodeEntryPatch | null>;
    writers?: Record<string, WriterEntryPatch | null>;
    hits?: number;
    nodesHit?: number;
    unlistedNodes?: number;
    conditions?: Condition[];
  };
}

/** Nodes a fleet lists under `status.nodes`; the rest are only counted. */
export const LISTED_NODES = 100;
/**
 * Devices a fleet lists among them, about 130 bytes each: with the node entries, a status of a few
 * tens of KiB at any fleet size, read by every watcher of GpuFaults at every change.
 */
export const LISTED_DEVICES = 256;

/** The writer name of a fleet: `:` is in no node name, so it never meets a plugin's. */
export function fleetWriter(selection = 'all'): string {
  return `fleet:${selection}`;
}

/**
 * A merge patch nests: without an explicit null, a message from the previous write would survive one
 * that has none. The list is cut at `room` and the CRD's limit; the rest are counted in `unlisted`.
 */
function entryPatch(e: NodeFaultStatus, room: number): NodeEntryPatch {
  const listed = Math.min(e.devices.length, FAULT_LIMITS.statusDevices, Math.max(room, 0));
  const unlisted = (e.unlisted ?? 0) + e.devices.length - listed;
  return {
    devices: e.devices.slice(0, listed),
    unlisted: unlisted > 0 ? unlisted : null,
    message: e.message === undefined ? null : e.message.slice(0, FAULT_LIMITS.message),
    observedGeneration: e.observedGeneration,
  };
}

/** Devices the entry says were hit: listed and only counted. */
function devicesOf(e: Pick<NodeFaultStatus, 'devices' | 'unlisted'>): number {
  return e.devices.length + (e.unlisted ?? 0);
}

/** One node's entry and its plugin's counts; null removes both (the fault no longer concerns the node). */
export function nodeStatusPatch(node: string, entry: NodeFaultStatus | null): StatusPatch {
  if (entry === null) return { status: { nodes: { [node]: null }, writers: { [node]: null } } };
  const devices = devicesOf(entry);
  return {
    status: {
      nodes: { [node]: entryPatch(entry, Infinity) },
      writers: { [node]: { nodes: devices > 0 ? 1 : 0, devices, unlistedNodes: null } },
    },
  };
}

/**
 * A fleet's entries and counts in one patch. `entries` holds every node of the fleet the fault
 * concerns; `listedNow` the fleet's nodes the object lists now, removed unless listed again. Only the
 * first `LISTED_NODES` nodes by name with something to say are listed, with `LISTED_DEVICES` devices
 * in all: the patch and the object stay small at 50,000 nodes.
 */
export function nodesStatusPatch(
  writer: string,
  entries: ReadonlyMap<string, NodeFaultStatus>,
  listedNow: Iterable<string> = [],
  limits = { nodes: LISTED_NODES, devices: LISTED_DEVICES },
): StatusPatch {
  const nodes: Record<string, NodeEntryPatch | null> = {};
  for (const node of listedNow) nodes[node] = null;
  let room = limits.devices;
  let listed = 0;
  let hitNodes = 0;
  let hitDevices = 0;
  let unlistedNodes = 0;
  for (const node of [...entries.keys()].sort()) {
    const e = entries.get(node);
    if (!e) continue;
    const devices = devicesOf(e);
    hitDevices += devices;
    if (devices > 0) hitNodes++;
    if (devices === 0 && e.message === undefined) continue;
    if (listed >= limits.nodes) {
      if (devices > 0) unlistedNodes++;
      continue;
    }
    const p = entryPatch(e, room);
    room -= p.devices.length;
    listed++;
    nodes[node] = p;
  }
  const counts: WriterEntryPatch | null =
    hitNodes === 0 && listed === 0
      ? null
      : { nodes: hitNodes, devices: hitDevices, unlistedNodes: unlistedNodes > 0 ? unlistedNodes : null };
  return { status: { nodes, writers: { [writer]: counts } } };
}

/** Whether writing `next` for a node would change what the object already says (skip the write). */
export function entryUnchanged(f: GpuFault, node: string, next: NodeFaultStatus | null): boolean {
  const prev = f.status?.nodes?.[node];
  const counts = f.status?.writers?.[node];
  if (next === null) return prev === undefined && counts === undefined;
  if (prev === undefined || counts === undefined) return false;
  const p = nodeStatusPatch(node, next).status;
  const e = p.nodes?.[node];
  const w = p.writers?.[node];
  return (
    JSON.stringify(prev.devices) === JSON.stringify(e?.devices) &&
    (prev.unlisted ?? null) === e?.unlisted &&
    (prev.message ?? null) === e.message &&
    prev.observedGeneration === e.observedGeneration &&
    counts.nodes === w?.nodes &&
    counts.devices === w.devices
  );
}

export interface FaultTotals {
  hits: number;
  nodesHit: number;
  unlistedNodes: number;
}

/** The writers' counts summed: devices and nodes hit, and the nodes hit that have no entry. */
export function totalsOf(f: Pick<GpuFault, 'status'>): FaultTotals {
  const t = { hits: 0, nodesHit: 0, unlistedNodes: 0 };
  for (const w of Object.values(f.status?.writers ?? {})) {
    t.hits += w.devices;
    t.nodesHit += w.nodes;
    t.unlistedNodes += w.unlistedNodes ?? 0;
  }
  return t;
}

/** Devices hit on all nodes: those listed and those only counted. */
export function hitsOf(f: Pick<GpuFault, 'status'>): number {
  return totalsOf(f).hits;
}

/**
 * The totals brought in line with the writers' counts, or null when they are, or when it is not this
 * writer's to fix. Writers would race on the same numbers: only the first writer by name writes them,
 * after each change it sees, so they settle once the counts do. With no writer left, any may write 0s.
 */
export function summaryPatch(f: GpuFault, mine: (writer: string) => boolean): StatusPatch | null {
  const t = totalsOf(f);
  const s = f.status;
  if (s?.hits === t.hits && s.nodesHit === t.nodesHit && (s.unlistedNodes ?? 0) === t.unlistedNodes)
    return null;
  const [owner] = Object.keys(s?.writers ?? {}).sort();
  if (owner !== undefined && !mine(owner)) return null;
  if (owner === undefined && s?.hits === undefined && s?.nodesHit === undefined) return null;
  return { status: { ...t } };
}

/** The condition a writer sets on a fault it cannot read. */
export const ACCEPTED = 'Accepted';

/**
 * `Accepted=False` with why, for a fault object that does not parse (`obj` as the API server sent it),
 * or null when the object already says so: every writer reports the same line, once.
 */
export function invalidPatch(obj: unknown, why: string, now: Date, reason = 'Invalid'): StatusPatch | null {
  const o = obj as {
    metadata?: { generation?: unknown };
    status?: { conditions?: unknown };
  } | null;
  const generation = typeof o?.metadata?.generation === 'number' ? o.metadata.generation : undefined;
  const message = why.slice(0, FAULT_LIMITS.message);
  const conditions = Array.isArray(o?.status?.conditions) ? (o.status.conditions as unknown[]) : [];
  const same = conditions.some((c) => {
    const x = c as Partial<Condition> | null;
    return (
      x?.type === ACCEPTED &&
      x.status === 'False' &&
      x.message === message &&
      x.observedGeneration === generation
    );
  });
  if (same) return null;
  return {
    status: {
      conditions: [
        {
          type: ACCEPTED,
          status: 'False',
          reason,
          message,
          ...(generation === undefined ? {} : { observedGeneration: generation }),
          lastTransitionTime: apiTime(now),
        },
      ],
    },
  };
}

/** RFC 3339 in whole seconds, as the API server writes times. */
export function apiTime(d: Date): string {
  return new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
