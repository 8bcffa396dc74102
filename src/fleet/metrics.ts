import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import type { RingState } from '../kube/sharding/sharder.js';
import type { Fleet } from './fleet.js';

/**
 * What the fleet's faults report as they happen; registered before the fleet exists, since the fleet is
 * built with these callbacks.
 */
export function faultMetrics(reg: Registry): {
  onFaultApplied: (devices: number) => void;
  onFaultPublished: (seconds: number) => void;
} {
  const applied = new Counter({
    name: 'fakegpu_fleet_faults_applied_total',
    help: 'devices GpuFaults hit on served nodes, counted when their slices change',
    registers: [reg],
  });
  const publish = new Histogram({
    name: 'fakegpu_fleet_fault_publish_seconds',
    help: 'seconds from a GpuFault seen to the slices of every node it hits written',
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [reg],
  });
  return {
    onFaultApplied: (n) => {
      applied.inc(n);
    },
    onFaultPublished: (sec) => {
      publish.observe(sec);
    },
  };
}

/**
 * The process's own metrics and the fleet's sizes and counters, read at each scrape, of the fleet that
 * works now: a standby's, or a leader's between terms, read 0.
 */
export function fleetGauges(reg: Registry, current: () => Fleet | null): void {
  collectDefaultMetrics({ register: reg, prefix: 'fakegpu_fleet_' });
  const gauge = (name: string, help: string, of: (fleet: Fleet) => number): void => {
    const read = (): number => {
      const fleet = current();
      return fleet ? of(fleet) : 0;
    };
    new Gauge({
      name,
      help,
      registers: [reg],
      collect() {
        this.set(read());
      },
    });
  };
  gauge('fakegpu_fleet_nodes', 'nodes served', (fleet) => fleet.snapshot().nodes);
  gauge(
    'fakegpu_fleet_owned_nodes',
    "served nodes this replica writes (its shards' when sharded)",
    (fleet) => fleet.snapshot().owned,
  );
  gauge(
    'fakegpu_fleet_pending_nodes',
    'nodes queued or being reconciled',
    (fleet) => fleet.snapshot().pending,
  );
  gauge('fakegpu_fleet_slices', 'ResourceSlices of served nodes', (fleet) => fleet.snapshot().slices);
  gauge('fakegpu_fleet_writes', 'slice creates, updates and deletes so far', (fleet) => fleet.stats.writes);
  gauge(
    'fakegpu_fleet_api_requests',
    'API requests so far (lists, watches, writes, events)',
    (fleet) => fleet.stats.requests,
  );
  gauge(
    'fakegpu_fleet_watch_events',
    'node and slice watch events received so far',
    (fleet) => fleet.stats.events,
  );
  gauge('fakegpu_fleet_converged', '1 when every served node is published', (fleet) =>
    fleet.converged() ? 1 : 0,
  );
  gauge(
    'fakegpu_fleet_memory_collections',
    "V8's memory-reducing collections run after bursts of work (needs --expose-gc)",
    (fleet) => fleet.settler.collections,
  );
  gauge(
    'fakegpu_fleet_first_published_seconds',
    'seconds from start until every served node was first published (-1 until then)',
    (fleet) => (fleet.firstConvergedMs === null ? -1 : fleet.firstConvergedMs / 1000),
  );
}

/** A sharded fleet's place in the ring, read at each scrape. */
export function shardGauges(reg: Registry, state: () => RingState): void {
  const gauge = (name: string, help: string, of: (s: RingState) => number): void => {
    new Gauge({
      name,
      help,
      registers: [reg],
      collect() {
        this.set(of(state()));
      },
    });
  };
  gauge('fakegpu_fleet_shards_held', 'shards this replica holds and writes', (s) => s.held);
  gauge('fakegpu_fleet_shard_members', 'live replicas, as this one sees them', (s) => s.members);
  gauge(
    'fakegpu_fleet_shards_covered',
    'shards held by a live replica, as this one sees them',
    (s) => s.covered,
  );
}
