import { createHash } from 'node:crypto';

/**
 * Which shard a key (a node's name) falls in, and what one member of a sharded controller does next
 * with the shards' Leases: pure, so that every rule of the handoff is tested without an API server.
 *
 * The shards are fixed (`--shards`), the members are not. A node's shard is a hash of its name, so
 * every replica computes it alone and nothing is written per node. Each member keeps what it holds up
 * to an even share of the shards (`ceil(shards / live members)`), gives back what is over it, and takes
 * free shards up to it: a member that joins takes only its share from the others, and a member that
 * dies leaves only its own shards to move, as in the lease-taking of Amazon's Kinesis Client Library.
 * Rendezvous hashing orders the shards each member prefers, so that members taking at the same time
 * mostly reach for different ones (a collision is a 409 on the shard's Lease, retried next period).
 */

/** A key's shard: the first four bytes of its MD5, modulo the shard count (a uniform spread, not a secret). */
export function shardOf(key: string, shards: number): number {
  return createHash('md5').update(key).digest().readUInt32BE(0) % shards;
}

/** How much `member` prefers `shard`: rendezvous (highest random weight) hashing. */
export function weight(member: string, shard: number): number {
  return createHash('md5')
    .update(`${member}\u0000${String(shard)}`)
    .digest()
    .readUInt32BE(0);
}

/** What one member sees of the shards' Leases in one list. */
export interface ShardView {
  /** Shard count. */
  shards: number;
  /** This member's identity. */
  me: string;
  /** Live members (this one included), as this member judges them. */
  live: readonly string[];
  /** Each shard's holder: an identity, '' when released, undefined when its Lease does not exist yet. */
  holders: readonly (string | undefined)[];
  /** Whether a holder is gone: its member Lease unchanged (or absent) for a lease duration on our clock. */
  gone: (identity: string) => boolean;
  /** Whether this member may take shards this period (its own Lease is renewed, and it has settled in). */
  mayTake: boolean;
}

export interface ShardPlan {
  /** Held shards to stop writing and hand back, least preferred first. */
  release: number[];
  /**
   * Free shards to try, most preferred first, until `room` are taken: a shard another member took first
   * (a 409) is passed over for the next, so that members taking at once fill their shares in one period.
   */
  take: number[];
  /** How many more this member may hold. */
  room: number;
}

/** An even share: `ceil(shards / members)`, so that the shards are all held when every member has its share. */
export function share(shards: number, members: number): number {
  return Math.ceil(shards / Math.max(1, members));
}

export function planShards(v: ShardView): ShardPlan {
  const cap = share(v.shards, v.live.length);
  const byPreference = (a: number, b: number) => weight(v.me, b) - weight(v.me, a) || a - b;
  const mine: number[] = [];
  const free: number[] = [];
  for (let k = 0; k < v.shards; k++) {
    const h = v.holders[k];
    if (h === v.me) mine.push(k);
    else if (h === undefined || h === '' || v.gone(h)) free.push(k);
  }
  mine.sort(byPreference);
  const release = mine.length > cap ? mine.slice(cap).reverse() : [];
  const room = v.mayTake ? Math.max(0, cap - mine.length) : 0;
  return { release, take: room > 0 ? free.sort(byPreference) : [], room };
}

/** Tries `take` in order until `room` attempts succeed; returns the shards taken. */
export async function takeInTurn(
  take: readonly number[],
  room: number,
  attempt: (shard: number) => Promise<boolean>,
): Promise<number[]> {
  const taken: number[] = [];
  for (const k of take) {
    if (taken.length >= room) break;
    if (await attempt(k)) taken.push(k);
  }
  return taken;
}
