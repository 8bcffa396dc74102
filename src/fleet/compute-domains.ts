import type { Logger } from 'pino';
import { DaemonStandIn, leanPod } from '../node/imex-daemon/daemon.js';
import {
  COMPUTE_DOMAINS_PATH,
  DOMAIN_LABEL,
  GPU_CLIQUE_LABEL,
  podsPath,
} from '../model/compute-domain/resource.js';
import { COMPUTE_DOMAIN_DRIVER } from '../model/compute-domain/slice.js';
import { decodeComputeDomainConfig } from '../model/opaque-config/compute-domain.js';
import { ApiError, type ApiClient } from '../kube/client.js';
import { Informer } from '../kube/informer.js';
import type { ObjectApi } from '../kube/objects.js';
import { Periodic } from '../kube/periodic.js';
import { CLAIMS_PATH, type ResourceClaim } from '../kube/types/claim.js';

/**
 * What the node-side of NVIDIA's ComputeDomains does that KWOK nodes cannot: no kubelet prepares their
 * claims, so the fleet labels a node for a domain once a channel claim of that domain is allocated
 * there and reserved for a pod (the plugin's label at prepare, which brings the domain's daemon pod),
 * and removes it once no such claim is left; it writes the IMEX daemon's clique entries for daemon pods
 * KWOK runs (`DaemonStandIn`), and sets `nvidia.com/gpu.clique` on nodes with NVLink fabric, as GPU
 * Feature Discovery does on real ones.
 */

export const CHANNEL_PERIOD_MS = 1000;

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
  /** With it, claims and daemon pods are kept by watches instead of listed every pass. */
  http?: ApiClient | undefined;
}

export interface Channel {
  node: string;
  domainID: string;
  /** The claim's: the plugin refuses a channel of a domain in another namespace, and labels nothing. */
  namespace: string;
}

/** A channel claim of this driver allocated and reserved for a pod: its node and domain; else null. */
export function channelOf(c: ResourceClaim): Channel | null {
  if ((c.status?.reservedFor ?? []).length === 0) return null;
  const devices = c.status?.allocation?.devices;
  const r = (devices?.results ?? []).find(
    (x) => x.driver === COMPUTE_DOMAIN_DRIVER && x.device === 'channel-0',
  );
  if (!r) return null;
  const config = (devices?.config ?? []).filter((x) => x.opaque?.driver === COMPUTE_DOMAIN_DRIVER).pop();
  try {
    return {
      node: r.pool,
      domainID: decodeComputeDomainConfig(config?.opaque?.parameters).domainID,
      namespace: c.metadata.namespace,
    };
  } catch {
    // A config the real plugin would refuse at prepare: no label, as its prepare fails.
    return null;
  }
}

/** Which of the fleet's nodes should carry which domain's label, from the channels allocated there. */
export function channelLabels(
  channels: readonly (Channel | null)[],
  ours: (node: string) => boolean,
): Map<string, string> {
  const want = new Map<string, string>();
  for (const c of channels) if (c && ours(c.node)) want.set(c.node, c.domainID);
  return want;
}

export class FleetComputeDomains {
  private readonly daemon: DaemonStandIn;
  private readonly loop: Periodic;

  private readonly informers: Informer<unknown>[] = [];
  private readonly channels: Informer<Channel> | null;

  constructor(private readonly o: FleetComputeDomainsOptions) {
    const pods = o.http
      ? new Informer(o.http, podsPath(o.namespace), { labelSelector: DOMAIN_LABEL }, leanPod, o.log)
      : null;
    this.channels = o.http
      ? new Informer(o.http, CLAIMS_PATH, {}, (c) => channelOf(c as ResourceClaim), o.log)
      : null;
    for (const i of [pods, this.channels]) if (i) this.informers.push(i);
    this.daemon = new DaemonStandIn({
      api: o.api,
      namespace: o.namespace,
      cliqueOf: (node) => o.view.cliqueOf(node) ?? undefined,
      log: o.log,
      periodMs: o.periodMs,
      ...(pods ? { pods: () => pods.snapshot() } : {}),
    });
    this.loop = new Periodic(() => this.tick(), {
      periodMs: o.periodMs ?? CHANNEL_PERIOD_MS,
      log: o.log,
      what: 'ComputeDomain node labels not written',
    });
  }

  start(): void {
    for (const i of this.informers) i.start();
    this.daemon.start();
    this.loop.start();
  }

  async stop(): Promise<void> {
    for (const i of this.informers) i.stop();
    await Promise.all([this.loop.stop(), this.daemon.stop()]);
  }

  /** Node label writes that failed, each retried the next pass; tests and logs read it. */
  failures = 0;

  async tick(): Promise<void> {
    const { api, view } = this.o;
    const channels = this.channels
      ? this.channels.snapshot()
      : (await api.list<ResourceClaim>(CLAIMS_PATH)).map(channelOf);
    if (channels === undefined) return;
    const domains = await api.list<{ metadata: { uid: string; namespace?: string } }>(COMPUTE_DOMAINS_PATH);
    // A deleted domain's nodes are the controller's to unlabel (its claims may outlive it); a claim in
    // another namespace than its domain's fails the plugin's prepare ("the ResourceClaim's namespace is
    // different than the ComputeDomain's namespace"), which then labels nothing.
    const live = new Map(domains.map((d) => [d.metadata.uid, d.metadata.namespace ?? '']));
    const valid = channels.filter((c) => c !== null && live.get(c.domainID) === c.namespace);
    const want = channelLabels(valid, (n) => view.cliqueOf(n) !== undefined && view.cliqueOf(n) !== null);
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
        if (e instanceof ApiError && e.code === 404) continue;
        // One node's failure (a webhook, a conflict) leaves the others to this pass, itself to the next.
        this.failures++;
        this.o.log.warn(
          { node, err: e instanceof Error ? e.message : String(e) },
          'ComputeDomain node labels not written; retried next pass',
        );
      }
    }
  }
}
