import type { ResourceClaim } from '../../kube/types/claim.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
import { score, type Scorecard } from '../../model/scorecard/score.js';
import type { PreparedClaim } from '../checkpoint/checkpoint.js';

/**
 * The scorecard of the plugin's own node (docs/scorecard.md): its slices as last published and the claims
 * it has prepared, from its checkpoints, so it asks the API server nothing more. A claim allocated to the
 * node whose pod has not started yet is not counted until the kubelet prepares it; evicted pods are the
 * fleet's and `fakegpu report`'s to count.
 */
export class NodeScorecard {
  private readonly slices = new Map<string, readonly ResourceSlice[]>();

  constructor(
    private readonly nodeName: string,
    /** The GPU driver's name (`--driver-name`). */
    private readonly gpuDriver: string,
    private readonly prepared: () => readonly {
      driver: string;
      claims: readonly [string, PreparedClaim][];
    }[],
  ) {}

  /** Told the slices a driver's pool equals after each publish. */
  published(driver: string, slices: readonly ResourceSlice[]): void {
    this.slices.set(driver, slices);
  }

  scorecard(): Scorecard | null {
    if (this.slices.size === 0) return null;
    const claims: ResourceClaim[] = this.prepared().flatMap(({ driver, claims: held }) =>
      held.map(([uid, c]) => claimOf(driver, uid, c)),
    );
    return score({
      nodes: [{ metadata: { name: this.nodeName } }],
      slices: [...this.slices.values()].flat(),
      claims,
      pods: [],
      gpuDriver: this.gpuDriver,
    });
  }
}

/** A prepared claim as the scorecard reads an allocated one: its devices, an IMEX channel's domain. */
function claimOf(driver: string, uid: string, c: PreparedClaim): ResourceClaim {
  const domain = c.devices.find((d) => d.type === 'channel' && d.computeDomain)?.computeDomain?.uid;
  return {
    metadata: { name: c.name, namespace: c.namespace, uid },
    status: {
      allocation: {
        devices: {
          results: c.devices
            .filter((d) => d.adminAccess !== true)
            .map((d) => ({
              request: d.requestNames[0] ?? '',
              driver,
              pool: d.poolName,
              device: d.deviceName,
            })),
          config: domain
            ? [{ source: 'FromClaim', opaque: { driver, parameters: { domainID: domain } } }]
            : [],
        },
      },
    },
  };
}
