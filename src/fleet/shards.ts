import type { Logger } from 'pino';
import { Sharder, type RingState } from '../kube/sharding/sharder.js';
import { shardOf } from '../kube/sharding/ring.js';
import type { ObjectApi } from '../kube/objects.js';
import type { Fleet } from './fleet.js';

/**
 * The fleet split between replicas: each node belongs to one of `shards` shards by the hash of its name,
 * and each replica writes only the nodes of the shards it holds (`kube/sharding/`). Every replica still
 * watches every node and slice (each event is a few bytes of metadata), so a shard taken over is judged
 * against what is already known and costs no list; writes, GPU metrics, faults and ComputeDomain daemons
 * are per shard.
 */

export interface FleetShardingOptions {
  api: ObjectApi;
  namespace: string;
  /** The Leases' common name (`--leader-election-lease-name`). */
  name: string;
  shards: number;
  identity: () => string;
  leaseDurationMs?: number | undefined;
  renewDeadlineMs?: number | undefined;
  retryPeriodMs?: number | undefined;
}

export class FleetShards {
  private readonly sharder: Sharder;
  private fleet: Fleet | null = null;

  constructor(
    private readonly o: FleetShardingOptions,
    log: Logger,
  ) {
    this.sharder = new Sharder({
      ...o,
      log,
      // Nothing is taken while a single leader of the same name writes (a rollout from one replica).
      exclusive: true,
      gained: (k) => this.fleet?.resync(k),
      lost: async (k) => {
        await this.fleet?.disown(k);
      },
    });
  }

  /** The node's shard: the fleet keeps it with the node, so that the hash runs once per node. */
  shardOf(node: string): number {
    return shardOf(node, this.o.shards);
  }

  /** Whether this replica writes the nodes of shard `k` now. */
  holds(k: number): boolean {
    return this.sharder.owns(k);
  }

  /** Until when (monotonic ms) shard `k` may be written: its member Lease's fence; 0 when not held. */
  heldUntil(k: number): number {
    return this.sharder.heldUntil(k);
  }

  state(): RingState {
    return this.sharder.state();
  }

  /** What the fault status needs: a writer per shard, and which are this replica's now. */
  get faultShards(): { count: number; of(node: string): number; held(): number[] } {
    return {
      count: this.o.shards,
      of: (node) => shardOf(node, this.o.shards),
      held: () => this.sharder.heldShards(),
    };
  }

  /** Joins once the fleet's lists are in, so that a shard taken is written at once. */
  start(fleet: Fleet): void {
    this.fleet = fleet;
    this.sharder.start();
  }

  async stop(): Promise<void> {
    await this.sharder.stop();
  }
}
