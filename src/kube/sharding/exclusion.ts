import { leasePath, type Lease } from '../lease.js';
import type { ObjectApi } from '../objects.js';

/**
 * One writer across the two ways the fleet coordinates: one elected leader (Lease `<name>`) or shards
 * (`<name>-shard-<k>`, `<name>-member-…`). A rollout that switches between them (the chart's
 * `fleet.replicas` from 1 to 3, or back) starts the new pods while the old still write; each kind waits
 * out the other, judged as each judges its own: a holder is live until its record has stayed unchanged
 * for a lease duration on the observer's clock.
 */

export const SHARDED_BY_LABEL = 'fakegpu.dev/sharded-by';
export const ROLE_LABEL = 'fakegpu.dev/shard-role';

/** Records seen and when they last changed, on our clock: a holder is live until one duration after. */
export class Liveness {
  private readonly seen = new Map<string, { key: string; at: number }>();

  constructor(
    private readonly durationMs: number,
    private readonly now: () => number,
  ) {}

  /** Notes `key` for `id` as seen now (the time is kept only when it changed). */
  note(id: string, key: string): void {
    if (this.seen.get(id)?.key !== key) this.seen.set(id, { key, at: this.now() });
  }

  /** Milliseconds since `id`'s record last changed, as we saw it; 0 for one never seen. */
  unchangedFor(id: string): number {
    const s = this.seen.get(id);
    return s ? this.now() - s.at : 0;
  }

  /** Notes `key` for `id` as seen now; true while it has changed within the lease duration. */
  live(id: string, key: string): boolean {
    this.note(id, key);
    return this.unchangedFor(id) < this.durationMs;
  }

  /** Forgets everyone not in `ids`, so that the map stays as small as the ring. */
  keep(ids: ReadonlySet<string>): void {
    for (const id of this.seen.keys()) if (!ids.has(id)) this.seen.delete(id);
  }
}

/** What changes at each renew of a Lease; a missing Lease is a record of its own. */
export const record = (l: Lease | undefined | null): string =>
  l ? `${l.spec?.holderIdentity ?? ''}|${l.spec?.renewTime ?? ''}` : '<absent>';

/** For the single leader: whether a live member of the ring still holds a shard (then it may not lead). */
export function ringQuiet(
  api: ObjectApi,
  namespace: string,
  name: string,
  durationMs: number,
  now: () => number = () => performance.now(),
): () => Promise<boolean> {
  const liveness = new Liveness(durationMs, now);
  return async () => {
    const leases = await api.list<Lease>(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, {
      labelSelector: `${SHARDED_BY_LABEL}=${name}`,
    });
    const members = new Map<string, Lease>();
    for (const l of leases)
      if (l.metadata.labels?.[ROLE_LABEL] === 'member' && l.spec?.holderIdentity)
        members.set(l.spec.holderIdentity, l);
    const holders = new Set(
      leases
        .filter((l) => l.metadata.labels?.[ROLE_LABEL] === 'shard')
        .map((l) => l.spec?.holderIdentity ?? '')
        .filter((h) => h !== ''),
    );
    liveness.keep(holders);
    let quiet = true;
    for (const h of holders) if (liveness.live(h, record(members.get(h)))) quiet = false;
    return quiet;
  };
}

/** For the ring: whether the single leader's Lease is held by a live leader (then no shard is taken). */
export function leaderLive(
  api: ObjectApi,
  namespace: string,
  name: string,
  liveness: Liveness,
): () => Promise<boolean> {
  return async () => {
    const l = await api.get<Lease>(leasePath(namespace, name));
    if (!l?.spec?.holderIdentity) return false;
    return liveness.live('leader', record(l));
  };
}
