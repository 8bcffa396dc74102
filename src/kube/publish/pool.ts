import { createHash } from 'node:crypto';
import type { ClusterApi, StoredSlice } from '../api.js';
import type { WrittenRef } from '../client.js';
import type { ResourceSlice } from '../types/resource.js';

export type { StoredSlice } from '../api.js';

/**
 * How a node's pool on the API server is brought to the desired slices, shared by the node plugin's
 * publisher and the fleet: which existing slice each desired one replaces, what is extra, and whether
 * anything needs writing at all. Pure; the callers do the I/O.
 */

/** What planning needs of a published slice. */
export interface PublishedSlice {
  name: string;
  /** `specKey` of its spec. */
  key: string;
  generation: number;
  /** Its stored metadata, kept on replace; absent: name and owner only. */
  metadata?: StoredSlice['metadata'];
}

/**
 * JSON with object keys sorted and null/undefined members and taint times dropped: equal for values that
 * differ only in key order, absent-vs-null or when the API server stamped a taint. Written straight to a string (no sorted copies of every object),
 * because the fleet keys thousands of slices.
 */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v))
    return `[${v.map((x) => (x === undefined || x === null ? 'null' : canonicalJson(x))).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const parts: string[] = [];
    for (const k of Object.keys(o).sort()) {
      // The API server stamps a taint's time; equal taints are equal whoever stamped them.
      if (k === 'timeAdded') continue;
      const x = o[k];
      if (x !== undefined && x !== null) parts.push(`${JSON.stringify(k)}:${canonicalJson(x)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(v);
}

/** The text a spec's key is taken from: its canonical JSON with the pool generation, which every republish bumps, at 0. */
export function canonicalSpec(spec: ResourceSlice['spec']): string {
  return canonicalJson({ ...spec, pool: { ...spec.pool, generation: 0 } });
}

export function keyOfCanonical(canonical: string): string {
  return createHash('sha1').update(canonical).digest('base64');
}

/** A spec's content apart from the pool generation: equal specs, equal keys. */
export function specKey(spec: ResourceSlice['spec']): string {
  return keyOfCanonical(canonicalSpec(spec));
}

export function published(s: StoredSlice, keepMetadata: boolean): PublishedSlice {
  return {
    name: s.metadata.name ?? '',
    key: specKey(s.spec),
    generation: s.spec.pool.generation,
    ...(keepMetadata ? { metadata: s.metadata } : {}),
  };
}

/** What the API server keeps of a generateName before its 5 random characters (k8s.io/apiserver names.go). */
const GENERATED_BASE_MAX = 58;

/**
 * Whether `name` was made of `generateName`: whole, then 5 characters, or, as the API server makes it,
 * cut to its first 58 (a node name past about 37 characters, such as GKE's, loses its end there).
 */
function madeOf(name: string, generateName: string): boolean {
  if (!/^[a-z0-9]{5}$/.test(name.slice(-5))) return false;
  const base = name.slice(0, -5);
  return (
    base === generateName ||
    (generateName.length > GENERATED_BASE_MAX && base === generateName.slice(0, GENERATED_BASE_MAX))
  );
}

/** The slice index encoded in an indexed generateName (`00003-gpu.nvidia.com-node-abcde` → 3). */
export function indexOf(name: string | undefined, driver: string, node: string): number | null {
  const m = name ? /^([0-9a-f]{5,})-/.exec(name) : null;
  if (!name || !m || !madeOf(name, `${m[1] ?? ''}-${driver}-${node}-`)) return null;
  return Number.parseInt(m[1] ?? '', 16);
}

/** The API server's alphabet for the suffix of a generated name (k8s.io/apiserver names.go). */
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
/** A name is a DNS subdomain: the base keeps room for the suffix. */
const NAME_BASE_MAX = 253 - 5;

/**
 * A name shaped as the API server makes one of `generateName` (the base, then five of its letters), the
 * suffix drawn from the node's uid and the slice's place in its pool instead of at random: a create that
 * reaches the server late, after another writer made the same slice, then conflicts (409) instead of
 * adding a second slice to the pool. The place tells apart the slices of a pool whose names carry no
 * index (DRA driver 25.12). The base is not cut to the 58 characters the API server keeps of a
 * generateName, so that `indexOf` reads a long node's slices as its own. Another uid, another name: a
 * node deleted and made again gets new slices while the garbage collector takes the old ones.
 */
export function sliceName(generateName: string, nodeUid: string, place: number): string {
  const base = generateName.slice(0, NAME_BASE_MAX);
  const digest = createHash('sha256')
    .update(`${nodeUid}/${generateName}/${String(place)}`)
    .digest();
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[(digest[i] ?? 0) % NAME_ALPHABET.length] ?? 'b';
  return base + suffix;
}

/** A slice to publish, with the key of its spec. */
export interface Desired {
  key: string;
}

export interface DesiredSlice extends Desired {
  slice: ResourceSlice;
}

export function keyed(slices: readonly ResourceSlice[]): DesiredSlice[] {
  return slices.map((slice) => ({ slice, key: specKey(slice.spec) }));
}

export interface PoolPlan<D extends Desired> {
  /** The pool generation every written slice gets. */
  generation: number;
  /** Each desired slice, with the existing one it replaces (null: create). */
  writes: { desired: D; existing: PublishedSlice | null }[];
  deletes: string[];
}

/**
 * Null when the pool already equals the desired slices (same contents, one generation, nothing extra).
 * Existing slices are matched to desired ones by the index in their name; slices named the older way
 * (`<node>-<driver>-xxxxx`, DRA driver 25.12) carry no index and take the free places in name order.
 */
export function planPool<D extends Desired>(
  existing: readonly PublishedSlice[],
  desired: readonly D[],
  driver: string,
  node: string,
): PoolPlan<D> | null {
  const byIndex = new Map<number, PublishedSlice>();
  const unindexed: PublishedSlice[] = [];
  const deletes: string[] = [];
  for (const s of existing) {
    const i = indexOf(s.name, driver, node);
    if (i === null && madeOf(s.name, `${node}-${driver}-`)) unindexed.push(s);
    else if (i === null || i >= desired.length || byIndex.has(i)) deletes.push(s.name);
    else byIndex.set(i, s);
  }
  unindexed.sort((a, b) => (a.name < b.name ? -1 : 1));
  for (let i = 0; i < desired.length && unindexed.length > 0; i++) {
    const s = byIndex.has(i) ? undefined : unindexed.shift();
    if (s) byIndex.set(i, s);
  }
  deletes.push(...unindexed.map((s) => s.name));
  const generation = Math.max(0, ...existing.map((s) => s.generation));
  const unchanged =
    deletes.length === 0 &&
    desired.every((d, i) => {
      const e = byIndex.get(i);
      return e !== undefined && e.key === d.key;
    }) &&
    existing.every((s) => s.generation === generation);
  if (unchanged) return null;
  return {
    generation: generation + 1,
    writes: desired.map((d, i) => ({ desired: d, existing: byIndex.get(i) ?? null })),
    deletes,
  };
}

/** The owner reference of a node's slices: the Node, so its deletion takes them along. */
export interface NodeOwner {
  apiVersion: 'v1';
  kind: 'Node';
  name: string;
  uid: string;
  controller: true;
}

/**
 * The desired slice with the times of taints it already carries on the server: the API server stamps a
 * taint without one at every write, and NVIDIA's DRA library keeps the old time of a taint whose key,
 * value and effect did not change, so `tolerationSeconds` keeps counting from when it first appeared.
 */
export function keepTaintTimes(
  desired: ResourceSlice,
  stored: StoredSlice['spec'] | undefined,
): ResourceSlice {
  const devices = desired.spec.devices;
  if (!stored?.devices || !devices?.some((d) => d.taints)) return desired;
  const times = new Map<string, string>();
  for (const d of stored.devices)
    for (const t of d.taints ?? [])
      if (t.timeAdded) times.set(JSON.stringify([d.name, t.key, t.value ?? '', t.effect]), t.timeAdded);
  return {
    ...desired,
    spec: {
      ...desired.spec,
      devices: devices.map((d) =>
        d.taints
          ? {
              ...d,
              taints: d.taints.map((t) => {
                const at = t.timeAdded ?? times.get(JSON.stringify([d.name, t.key, t.value ?? '', t.effect]));
                return at ? { ...t, timeAdded: at } : t;
              }),
            }
          : d,
      ),
    },
  };
}

/** Creates or replaces one slice of a plan. */
export async function writeSlice(
  api: ClusterApi,
  w: PoolPlan<DesiredSlice>['writes'][number],
  generation: number,
  owner: NodeOwner,
): Promise<WrittenRef> {
  const { existing } = w;
  const d = w.desired.slice;
  const spec = { ...d.spec, pool: { ...d.spec.pool, generation } };
  const metadata = existing
    ? (existing.metadata ?? { name: existing.name, ownerReferences: [owner] })
    : { generateName: d.metadata.generateName, ownerReferences: [owner] };
  const body = JSON.stringify({ apiVersion: d.apiVersion, kind: d.kind, metadata, spec });
  return existing ? api.replaceSlice(existing.name, body) : api.createSlice(body);
}
