import type { Logger } from 'pino';
import { attribute } from '../model/dcgm/attribution.js';
import { entitiesOf, instanceAt, type GpuEntity } from '../model/dcgm/entities.js';
import { parseMigDeviceName } from '../model/device/names.js';
import type { Machine } from '../model/hardware/machine.js';
import { DcgmExporter, type NodeGpus } from '../model/dcgm/exporter.js';
import type { Style } from '../model/dcgm/exposition.js';
import { BadLoadReporter, claimInformer, podInformer } from '../kube/dcgm-sources.js';
import { HEALTHY, healthOf } from '../model/dcgm/values.js';
import type { ClusterApi } from '../kube/api.js';
import type { ApiClient } from '../kube/client.js';
import type { NvmlFault } from '../model/nvml/state.js';
import type { Fleet } from './fleet.js';

/**
 * dcgm-exporter for every node the fleet serves, in one exposition told apart by the host label. No
 * kubelet prepares these nodes' claims, so who holds a device comes from the claims' allocations and
 * the pods that use them; a MIG partition allocated under dynamic MIG is shown as the GPU instance
 * NVIDIA's driver would create for it (its placement decides NVML's instance id).
 */
export class FleetDcgm {
  private readonly exporter: DcgmExporter;
  private readonly pods;
  private readonly claims;
  private readonly bad;
  private readonly driverName: string;
  /** By profile machine: its GPUs for any node, which UUIDs to derive again worked out once. */
  private readonly entities = new WeakMap<Machine, ReturnType<typeof entitiesOf>>();

  constructor(
    private readonly fleet: Fleet,
    o: { http: ApiClient; api: ClusterApi; log: Logger; driverName: string; style?: Style | undefined },
  ) {
    this.exporter = new DcgmExporter({ style: o.style });
    this.pods = podInformer(o.http, o.log);
    this.claims = claimInformer(o.http, o.log);
    this.bad = new BadLoadReporter(o.api, o.log, 'fleet');
    this.driverName = o.driverName;
  }

  start(): void {
    this.pods.start();
    this.claims.start();
  }

  stop(): void {
    this.pods.stop();
    this.claims.stop();
  }

  exposition(): Iterable<string> {
    this.fleet.stats.scrapes++;
    const claims = this.claims.snapshot() ?? [];
    const pods = this.pods.snapshot();
    const attribution = attribute(claims, pods ?? [], this.driverName, this.bad.report);
    if (pods) this.bad.keepOnly(pods);
    // Dynamic MIG's partitions exist only while allocated: by node, the partitions claims hold there.
    const migByNode = new Map<string, Partition[]>();
    for (const c of claims)
      for (const r of c.results) {
        const p = r.driver === this.driverName ? parseMigDeviceName(r.device) : null;
        if (!p) continue;
        const list = migByNode.get(r.pool);
        if (list) list.push(p);
        else migByNode.set(r.pool, [p]);
      }
    return this.exporter.exposition(this.nodes(migByNode), attribution);
  }

  private *nodes(migByNode: ReadonlyMap<string, Partition[]>): Generator<NodeGpus> {
    for (const { node, machine, dynamicMig, faults } of this.fleet.servedMachines()) {
      let entities = this.entities.get(machine);
      if (!entities) this.entities.set(machine, (entities = entitiesOf(machine)));
      let gpus = entities(node);
      if (dynamicMig) gpus = withPartitions(gpus, migByNode.get(node) ?? []);
      yield { node, driverVersion: machine.driverVersion, gpus, health: healthBy(faults) };
    }
  }
}

type Partition = NonNullable<ReturnType<typeof parseMigDeviceName>>;

function healthBy(faults: readonly { uuid: string; fault: NvmlFault }[]): NodeGpus['health'] {
  if (faults.length === 0) return () => HEALTHY;
  return (uuid) => healthOf(faults.filter((f) => f.uuid === uuid).map((f) => f.fault));
}

/** GPUs with the instances their allocated partitions would have created; MIG mode where any is. */
function withPartitions(gpus: GpuEntity[], partitions: readonly Partition[]): GpuEntity[] {
  if (partitions.length === 0) return gpus;
  return gpus.map((g) => {
    const instances = partitions.flatMap((p) => {
      const profile =
        p.minor === g.minor ? g.model.mig?.profiles.find((x) => x.id === p.profileId) : undefined;
      return profile ? [instanceAt(g.model, profile, p.start)] : [];
    });
    return instances.length === 0 ? g : { ...g, instances: instances.sort((a, b) => a.id - b.id) };
  });
}
