import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CheckpointStore } from '../checkpoint/checkpoint.js';
import { attribute, type ClaimView } from '../../model/dcgm/attribution.js';
import { entitiesOf } from '../../model/dcgm/entities.js';
import { DcgmExporter } from '../../model/dcgm/exporter.js';
import type { Style } from '../../model/dcgm/exposition.js';
import { serveDcgm } from '../../process/dcgm-server.js';
import { BadLoadReporter, podInformer } from '../../kube/dcgm-sources.js';
import { healthOf } from '../../model/dcgm/values.js';
import type { Machine } from '../../model/hardware/machine.js';
import { KubeApi } from '../../kube/api.js';
import { clientOf } from '../../kube/client.js';
import type { MockNvml } from '../../model/nvml/mock.js';

export interface NodeDcgmOptions {
  endpoint: string;
  style?: Style | undefined;
  nodeName: string;
  driverName: string;
  machine: Machine;
  nvml: MockNvml;
  /** The claims prepared here: which devices each holds. */
  checkpoint: CheckpointStore;
  kc: KubeConfig;
  log: Logger;
}

/**
 * dcgm-exporter on this node: NVML's GPUs and MIG instances as they are now (dynamic MIG's included),
 * their faults, and the pods of this node that hold their prepared claims.
 */
export async function startNodeDcgm(o: NodeDcgmOptions): Promise<{ stop(): Promise<void> }> {
  const exporter = new DcgmExporter({ style: o.style });
  const pods = podInformer(clientOf(o.kc), o.log, o.nodeName);
  pods.start();
  const bad = new BadLoadReporter(new KubeApi(o.kc), o.log, 'plugin');
  const entities = entitiesOf(o.machine);
  const scrape = (): Iterable<string> => {
    const claims: ClaimView[] = o.checkpoint
      .all()
      .filter(([, c]) => c.state === 'PrepareCompleted')
      .map(([, c]) => ({
        namespace: c.namespace,
        name: c.name,
        results: c.devices.map((d) => ({ driver: o.driverName, pool: d.poolName, device: d.deviceName })),
      }));
    const live = pods.snapshot();
    const attribution = attribute(claims, live ?? [], o.driverName, bad.report);
    // Before the first list there is nothing to go by: what was told stays until there is.
    if (live) bad.keepOnly(live);
    const node = {
      node: o.nodeName,
      driverVersion: o.machine.driverVersion,
      gpus: entities(o.nodeName, (uuid) => o.nvml.gpuState(uuid)),
      health: (uuid: string) => healthOf(o.nvml.faults(uuid)),
    };
    return exporter.exposition([node], attribution);
  };
  let server;
  try {
    server = await serveDcgm(o.endpoint, scrape, o.log);
  } catch (e) {
    // A listen error is the CLI's one line; the informer's watch must not hold the process meanwhile.
    pods.stop();
    throw e;
  }
  o.log.info({ endpoint: o.endpoint }, 'serving GPU metrics as dcgm-exporter does');
  return {
    async stop() {
      pods.stop();
      await server.close();
    },
  };
}
