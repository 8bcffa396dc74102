import { FakegpuError } from '../../errors.js';
import type { ListedClaim } from '../../kube/types/claim.js';
import { keptValue, LOAD_ANNOTATIONS, loadOf, type Load } from './load.js';

/**
 * Which pod holds which device, as dcgm-exporter works it out with DRA: a claim's allocation names the
 * driver, pool and device; the pod the claim is reserved for, and its container that lists the claim,
 * give `pod`, `namespace` and `container`. dcgm-exporter asks the kubelet's PodResources for this; the
 * claims and pods it reports are the API server's, which is where the fleet (no kubelet prepares its
 * nodes' claims) and the node plugin both read them.
 */

export interface ClaimView {
  namespace: string;
  name: string;
  results: readonly { driver: string; pool: string; device: string }[];
}

export interface PodView {
  namespace: string;
  name: string;
  annotations: Readonly<Record<string, string>>;
  /** `status.startTime`, else the creation time; the load pattern's time zero. */
  startedAtMs: number;
  containers: readonly { name: string; claims: readonly string[] }[];
  /** The pod's claim names (`spec.resourceClaims[].name`) → the ResourceClaim each resolved to. */
  claims: Readonly<Record<string, string>>;
}

export interface Attribution {
  /** `container`, `dra_*`, `namespace`, `pod`: sorted in among the other extra labels when rendered. */
  labels: readonly (readonly [string, string])[];
  load: Load;
  startedAtMs: number;
}

export const deviceKey = (pool: string, device: string): string => `${pool}\0${device}`;

const label = (a: Pick<Attribution, 'labels'>, k: string): string =>
  a.labels.find(([n]) => n === k)?.[1] ?? '';
const who = (a: Pick<Attribution, 'labels'>): string =>
  `${label(a, 'namespace')}/${label(a, 'pod')}/${label(a, 'container')}`;

/**
 * Every device of `driver` that a claim used by a pod holds, by `deviceKey`. The pod is found through its
 * own claim references (`spec.resourceClaims`, and `status.resourceClaimStatuses` for templates), which
 * is how a claim made for it is named. A device is listed with every pod that holds it: through a claim
 * several pods share, or through several claims sharing the device (ConsumableShares). As dcgm-exporter
 * does (4.8's toDeviceToPodsDRA keeps a list of pods per device and copies each metric once per pod and
 * container), each container that lists a claim gets a series of its own, the same values with its
 * own `pod`, `container` and `dra_*` labels. A pod whose annotations do not parse keeps the default
 * load; `bad` hears of it.
 */
export function attribute(
  claims: Iterable<ClaimView>,
  pods: Iterable<PodView>,
  driver: string,
  bad: (pod: PodView, err: FakegpuError) => void,
): Map<string, Attribution[]> {
  const byClaim = new Map<string, { pod: PodView; podClaim: string }[]>();
  for (const pod of pods)
    for (const [podClaim, claim] of Object.entries(pod.claims)) {
      const key = `${pod.namespace}/${claim}`;
      byClaim.set(key, [...(byClaim.get(key) ?? []), { pod, podClaim }]);
    }
  const out = new Map<string, Attribution[]>();
  const loads = new Map<PodView, Load>();
  const loadFor = (pod: PodView): Load => {
    let load = loads.get(pod);
    if (!load) {
      try {
        load = loadOf(pod.annotations, `pod ${pod.namespace}/${pod.name}`);
      } catch (e) {
        if (!(e instanceof FakegpuError)) throw e;
        bad(pod, e);
        load = loadOf(undefined, '');
      }
      loads.set(pod, load);
    }
    return load;
  };
  for (const c of claims) {
    const mine = c.results.filter((r) => r.driver === driver);
    if (mine.length === 0) continue;
    for (const { pod, podClaim } of byClaim.get(`${c.namespace}/${c.name}`) ?? []) {
      const load = loadFor(pod);
      const listed = pod.containers.filter((k) => k.claims.includes(podClaim)).map((k) => k.name);
      const containers = listed.length > 0 ? listed : [''];
      for (const r of mine) {
        const key = deviceKey(r.pool, r.device);
        const rows = containers.map((container) => ({
          labels: [
            ['container', container],
            ['dra_claim_name', c.name],
            ['dra_claim_namespace', c.namespace],
            ['dra_device_name', r.device],
            ['dra_driver_name', r.driver],
            ['dra_pool_name', r.pool],
            ['namespace', pod.namespace],
            ['pod', pod.name],
          ] as const,
          load,
          startedAtMs: pod.startedAtMs,
        }));
        // dcgm-exporter keeps one series per pod and container on a device, the first claim's.
        const had = out.get(key) ?? [];
        const seen = new Set(had.map(who));
        out.set(key, [...had, ...rows.filter((x) => !seen.has(who(x)))]);
      }
    }
  }
  return out;
}

/** A ResourceClaim as the API server gives it, reduced to what attribution reads; null: not allocated. */
export function claimView(obj: unknown): ClaimView | null {
  const c = obj as ListedClaim;
  const results = c.status?.allocation?.devices?.results ?? [];
  if (results.length === 0) return null;
  return {
    namespace: c.metadata?.namespace ?? '',
    name: c.metadata?.name ?? '',
    results: results.map((r) => ({ driver: r.driver ?? '', pool: r.pool ?? '', device: r.device ?? '' })),
  };
}

interface PodObject {
  metadata?: {
    namespace?: string;
    name?: string;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
  };
  spec?: {
    containers?: { name?: string; resources?: { claims?: { name?: string }[] } }[];
    resourceClaims?: { name?: string; resourceClaimName?: string }[];
  };
  status?: {
    startTime?: string;
    phase?: string;
    resourceClaimStatuses?: { name?: string; resourceClaimName?: string }[];
  };
}

/**
 * Of a pod's annotations, those of its load, a long value cut: a cache of every pod with a claim would
 * otherwise hold everything every tool writes there.
 */
function loadAnnotations(all: Record<string, string> | undefined): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const k of LOAD_ANNOTATIONS) {
    const v = all?.[k];
    if (typeof v === 'string') kept[k] = keptValue(v);
  }
  return kept;
}

/** A pod reduced to what attribution reads; null: a pod without claims, or one that has finished. */
export function podView(obj: unknown): PodView | null {
  const p = obj as PodObject;
  const specClaims = p.spec?.resourceClaims ?? [];
  if (specClaims.length === 0) return null;
  if (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') return null;
  const claims: Record<string, string> = {};
  for (const c of specClaims) if (c.name && c.resourceClaimName) claims[c.name] = c.resourceClaimName;
  // Claims made from a template get their names in the status.
  for (const s of p.status?.resourceClaimStatuses ?? [])
    if (s.name && s.resourceClaimName) claims[s.name] = s.resourceClaimName;
  const started = Date.parse(p.status?.startTime ?? p.metadata?.creationTimestamp ?? '');
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    annotations: loadAnnotations(p.metadata?.annotations),
    startedAtMs: Number.isNaN(started) ? 0 : started,
    containers: (p.spec?.containers ?? []).map((c) => ({
      name: c.name ?? '',
      claims: (c.resources?.claims ?? []).map((x) => x.name ?? ''),
    })),
    claims,
  };
}
