import type { Logger } from 'pino';
import { attribute } from '../dcgm/attribution.js';
import { gpuEntities, instanceAt, parseMigDevice, type GpuEntity } from '../dcgm/entities.js';
import { DcgmExporter, type NodeGpus } from '../dcgm/exporter.js';
import type { Style } from '../dcgm/exposition.js';
import { badLoadReporter, claimInformer, podInformer } from '../dcgm/sources.js';
import { HEALTHY, healthOf } from '../dcgm/values.js';
import type { ClusterApi } from '../k8s/api.js';
import type { ApiClient } from '../k8s/client.js';
import type { NvmlFault } from '../nvml/state.js';
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

  constructor(
    private readonly fleet: Fleet,
    o: { http: ApiClient; api: ClusterApi; log: Logger; driverName: string; style?: Style | undefined },
  ) {
    this.exporter = new DcgmExporter({ style: o.style });
    this.pods = podInformer(o.http, o.log);
    this.claims = claimInformer(o.http, o.log);
    this.bad = badLoadReporter(o.api, o.log, 'fleet');
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
    const attribution = attribute(claims, this.pods.snapshot() ?? [], this.driverName, this.bad);
    // Dynamic MIG's partitions exist only while allocated: by node, the devices claims hold there.
    const migByNode = new Map<string, string[]>();
    for (const c of claims)
      for (const r of c.results)
        if (r.driver === this.driverName && parseMigDevice(r.device)) {
          const list = migByNode.get(r.pool);
          if (list) list.push(r.device);
          else migByNode.set(r.pool, [r.device]);
        }
    return this.exporter.exposition(this.nodes(migByNode), attribution);
  }

  private *nodes(migByNode: ReadonlyMap<string, string[]>): Generator<NodeGpus> {
    for (const { node, machine, dynamicMig, faults } of this.fleet.servedMachines()) {
      let gpus = gpuEntities(machine, node);
      if (dynamicMig) gpus = withPartitions(gpus, migByNode.get(node) ?? []);
      yield { node, driverVersion: machine.driverVersion, gpus, health: healthBy(faults) };
    }
  }
}

function healthBy(faults: readonly { uuid: string; fault: NvmlFault }[]): NodeGpus['health'] {
  if (faults.length === 0) return () => HEALTHY;
  return (uuid) => healthOf(faults.filter((f) => f.uuid === uuid).map((f) => f.fault));
}

/** GPUs with the instances their allocated partitions would have created; MIG mode where any is. */
function withPartitions(gpus: GpuEntity[], devices: readonly string[]): GpuEntity[] {
  if (devices.length === 0) return gpus;
  return gpus.map((g) => {
    const instances = devices.flatMap((d) => {
      const p = parseMigDevice(d);
      const profile =
        p && p.minor === g.minor ? g.model.mig?.profiles.find((x) => x.id === p.profileId) : undefined;
      return p && profile ? [instanceAt(g.model, profile, p.start)] : [];
    });
    return instances.length === 0 ? g : { ...g, instances: instances.sort((a, b) => a.id - b.id) };
  });
}
