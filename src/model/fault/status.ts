import { FAULT_LIMITS, type Condition, type GpuFault, type NodeFaultStatus } from './resource.js';

/**
 * JSON merge patches (RFC 7386) of a GpuFault's status, for `PATCH .../gpufaults/<name>/status` with
 * `application/merge-patch+json`. Each writer (a node's plugin, the fleet for its nodes) patches only
 * the entries of its own nodes under `status.nodes`, a map, so writers never conflict and need no
 * resourceVersion. Pure: the caller holds the object and does the I/O.
 */

/** A node entry as sent: optional fields a writer leaves out are null, so a merge removes stale ones. */
export interface NodeEntryPatch {
  devices: NodeFaultStatus['devices'];
  unlisted: number | null;
  message: string | null;
  observedGeneration: number;
}

export interface StatusPatch {
  status: {
    nodes?: Record<string, NodeEntryPatch | null>;
    hits?: number;
    conditions?: Condition[];
  };
}

/** Devices a batched patch lists in all, about 130 bytes each: far below etcd's 1.5 MiB an object. */
export const DEFAULT_LISTED = 4096;

/**
 * A merge patch nests: without an explicit null, a message from the previous write would survive one
 * that has none. The list is cut at the CRD's limit; the rest are counted in `unlisted`.
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

/** One node's entry; null removes it (the fault no longer concerns the node). */
export function nodeStatusPatch(node: string, entry: NodeFaultStatus | null): StatusPatch {
  return { status: { nodes: { [node]: entry === null ? null : entryPatch(entry, Infinity) } } };
}

/**
 * Many nodes' entries in one patch, as the fleet writes one per fault for all its nodes. Thousands of
 * nodes would outgrow the object: an entry with nothing hit and nothing to say is removed rather than
 * written, and past `maxListed` devices (nodes in name order) the rest are only counted.
 */
export function nodesStatusPatch(
  entries: ReadonlyMap<string, NodeFaultStatus | null>,
  maxListed = DEFAULT_LISTED,
): StatusPatch {
  const nodes: Record<string, NodeEntryPatch | null> = {};
  let room = maxListed;
  for (const node of [...entries.keys()].sort()) {
    const e = entries.get(node) ?? null;
    const empty = e === null || (e.devices.length === 0 && !e.unlisted && e.message === undefined);
    if (empty) {
      nodes[node] = null;
      continue;
    }
    const p = entryPatch(e, room);
    room -= p.devices.length;
    nodes[node] = p;
  }
  return { status: { nodes } };
}

/** Whether writing `next` for a node would change what the object already says (skip the write). */
export function entryUnchanged(f: GpuFault, node: string, next: NodeFaultStatus | null): boolean {
  const prev = f.status?.nodes?.[node];
  if (next === null) return prev === undefined;
  if (prev === undefined) return false;
  const p = entryPatch(next, Infinity);
  return (
    JSON.stringify(prev.devices) === JSON.stringify(p.devices) &&
    (prev.unlisted ?? null) === p.unlisted &&
    (prev.message ?? null) === p.message &&
    prev.observedGeneration === p.observedGeneration
  );
}

/** Devices hit on all nodes: those listed and those only counted. */
export function hitsOf(f: Pick<GpuFault, 'status'>): number {
  let n = 0;
  for (const e of Object.values(f.status?.nodes ?? {})) n += e.devices.length + (e.unlisted ?? 0);
  return n;
}

/**
 * `status.hits` brought in line with the nodes' entries, or null when it is, or when it is not this
 * writer's to fix. Writers would race on one number: only the writer of the first node entry (by
 * name) writes it, after each change it sees, so it settles once the entries do. With no entries left,
 * any writer may write the 0.
 */
export function summaryPatch(f: GpuFault, mine: (node: string) => boolean): StatusPatch | null {
  const hits = hitsOf(f);
  if (f.status?.hits === hits) return null;
  const [owner] = Object.keys(f.status?.nodes ?? {}).sort();
  if (owner !== undefined && !mine(owner)) return null;
  if (owner === undefined && f.status?.hits === undefined) return null;
  return { status: { hits } };
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
