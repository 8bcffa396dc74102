import type { Logger } from 'pino';
import { DaemonStandIn } from '../compute-domain/daemon.js';
import { COMPUTE_DOMAINS_PATH, DOMAIN_LABEL, GPU_CLIQUE_LABEL } from '../compute-domain/resource.js';
import { COMPUTE_DOMAIN_DRIVER } from '../compute-domain/slice.js';
import { decodeComputeDomainConfig } from '../config/compute-domain.js';
import { ApiError } from '../k8s/client.js';
import type { ObjectApi } from '../k8s/objects.js';
import type { ResourceClaim } from '../prepare/claim.js';

/**
 * What the node-side of NVIDIA's ComputeDomains does that KWOK nodes cannot: no kubelet prepares their
 * claims, so the fleet labels a node for a domain once a channel claim of that domain is allocated
 * there and reserved for a pod (the plugin's label at prepare, which brings the domain's daemon pod),
 * and removes it once no such claim is left; it writes the IMEX daemon's clique entries for daemon pods
 * KWOK runs (`DaemonStandIn`), and sets `nvidia.com/gpu.clique` on nodes with NVLink fabric, as GPU
 * Feature Discovery does on real ones.
 */

export const CHANNEL_PERIOD_MS = 1000;
const CLAIMS_PATH = '/apis/resource.k8s.io/v1/resourceclaims';

export interface FleetNodeView {
  /** The node's clique; null: no NVLink fabric; undefined: not a node of this fleet. */
  cliqueOf(node: string): string | null | undefined;
  labels(node: string): Record<string, string> | undefined;
  nodes(): Iterable<string>;
}

export interface FleetComputeDomainsOptions {
  api: ObjectApi;
  namespace: string;
  view: FleetNodeView;
  log: Logger;
  periodMs?: number;
}

type Claim = ResourceClaim & { status?: { reservedFor?: unknown[] } };

/** Which of the fleet's nodes should carry which domain's label, from the claims allocated there. */
export function channelLabels(
  claims: readonly Claim[],
  ours: (node: string) => boolean,
): Map<string, string> {
  const want = new Map<string, string>();
  for (const c of claims) {
    if ((c.status?.reservedFor ?? []).length === 0) continue;
    const devices = c.status?.allocation?.devices;
    for (const r of devices?.results ?? []) {
      if (r.driver !== COMPUTE_DOMAIN_DRIVER || r.device !== 'channel-0' || !ours(r.pool)) continue;
      const config = (devices?.config ?? []).filter((x) => x.opaque?.driver === COMPUTE_DOMAIN_DRIVER).pop();
      try {
        const cfg = decodeComputeDomainConfig(config?.opaque?.parameters);
        want.set(r.pool, cfg.domainID);
      } catch {
        // A config the real plugin would refuse at prepare: no label, as its prepare fails.
      }
    }
  }
  return want;
}

export class FleetComputeDomains {
  private readonly daemon: DaemonStandIn;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly o: FleetComputeDomainsOptions) {
    this.daemon = new DaemonStandIn({
      api: o.api,
      namespace: o.namespace,
      cliqueOf: (node) => {
        const c = o.view.cliqueOf(node);
        return c === null || c === undefined ? undefined : c;
      },
      log: o.log,
      periodMs: o.periodMs,
    });
  }

  start(): void {
    this.daemon.start();
    const loop = () => {
      if (this.stopped) return;
      this.running = this.tick()
        .catch((e: unknown) => {
          this.o.log.warn(
            { err: e instanceof Error ? e.message : String(e) },
            'ComputeDomain node labels not written',
          );
        })
        .finally(() => {
          this.running = null;
          if (!this.stopped) this.timer = setTimeout(loop, this.o.periodMs ?? CHANNEL_PERIOD_MS);
        });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.all([this.running, this.daemon.stop()]);
  }

  async tick(): Promise<void> {
    const { api, view } = this.o;
    const [claims, domains] = await Promise.all([
      api.list<Claim>(CLAIMS_PATH),
      api.list<{ metadata: { uid: string } }>(COMPUTE_DOMAINS_PATH),
    ]);
    const want = channelLabels(claims, (n) => view.cliqueOf(n) !== undefined && view.cliqueOf(n) !== null);
    // A deleted domain's nodes are the controller's to unlabel; its claims may outlive it.
    const live = new Set(domains.map((d) => d.metadata.uid));
    for (const [node, uid] of want) if (!live.has(uid)) want.delete(node);
    for (const node of view.nodes()) {
      const clique = view.cliqueOf(node);
      if (clique === undefined || clique === null) continue;
      const labels = view.labels(node) ?? {};
      const patch: Record<string, string | null> = {};
      if (labels[GPU_CLIQUE_LABEL] !== clique) patch[GPU_CLIQUE_LABEL] = clique;
      const domain = want.get(node) ?? null;
      if ((labels[DOMAIN_LABEL] ?? null) !== domain) patch[DOMAIN_LABEL] = domain;
      if (Object.keys(patch).length === 0) continue;
      try {
        await api.patch(`/api/v1/nodes/${node}`, { metadata: { labels: patch } });
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 404)) throw e;
      }
    }
  }
}
