import type { ResourceSlice } from '../../kube/types/resource.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KubeApi } from '../../kube/api.js';
import { fullJitter, PUBLISH_BACKOFF } from '../../kube/backoff.js';
import { serverVersion } from '../../kube/client.js';
import { gateMessage, probeGates, type GatedField } from '../../kube/publish/gates.js';
import { Publisher } from '../../kube/publish/publisher.js';
import { formatSemver, type Semver } from '../../kube/types/version.js';
import { COMPUTE_DOMAIN_DRIVER } from '../../model/compute-domain/slice.js';
import type { Driver } from './run.js';
import type { pluginMetrics } from './metrics.js';

/** A driver's slices before the API server is probed: every gated field in. */
const NOTHING_DROPPED: ReadonlySet<GatedField> = new Set();

export interface PublishOptions {
  kc: KubeConfig;
  nodeName: string;
  drivers: readonly Driver[];
  metrics: ReturnType<typeof pluginMetrics>;
  log: Logger;
  /** The compute-domain side is on but this machine has no NVLink fabric: its old pool is emptied. */
  retireComputeDomains: boolean;
  /** Where each started publisher goes, for the stop. */
  publishers: Publisher[];
  signal: AbortSignal;
  /** Told each driver's slices after each publish (the node's scorecard). */
  onPublished?: (driver: string, slices: readonly ResourceSlice[]) => void;
}

/** The API server's version, asked until it answers or the plugin stops (null then). */
async function awaitServer(o: PublishOptions): Promise<Semver | null> {
  for (let attempt = 0; ; attempt++) {
    if (o.signal.aborted) return null;
    try {
      return await serverVersion(o.kc);
    } catch (e) {
      const ms = fullJitter(attempt + 1, PUBLISH_BACKOFF);
      o.log.warn(
        { err: e instanceof Error ? e.message : String(e), retryInMs: Math.round(ms) },
        'the API server is not answering; slices wait',
      );
      await sleep(ms, undefined, { signal: o.signal }).catch(() => undefined);
    }
  }
}

/**
 * Slices wait for the API server; the kubelet's calls do not. Once it answers: the gated fields it drops
 * are probed, then every driver's slices are published and kept up to date. False: stopped before the end.
 */
export async function publishSlices(o: PublishOptions): Promise<boolean> {
  const version = await awaitServer(o);
  if (version === null) return false;
  // The probe is of the server, not of a driver: one dry run per gated field, whichever driver has it.
  const full = o.drivers.map((d) => d.slices(version, NOTHING_DROPPED));
  const off = await probeGates(new KubeApi(o.kc), full.flat());
  if (off.size > 0) o.log.warn({ dropped: [...off] }, gateMessage([...off], formatSemver(version)));
  for (const [i, d] of o.drivers.entries()) {
    if (o.signal.aborted) return false;
    const publisher = new Publisher(o.kc, {
      nodeName: o.nodeName,
      driverName: d.name,
      log: o.log,
      onSync: (_writes, devices, slices) => {
        o.metrics.published.set({ driver: d.name }, devices);
        d.published?.(slices);
        o.onPublished?.(d.name, slices);
      },
    });
    publisher.start(off.size === 0 ? (full[i] ?? []) : d.slices(version, off));
    d.changes?.(() => {
      publisher.update(d.slices(version, off));
    });
    o.publishers.push(publisher);
  }
  // A node relabelled from a GB200 to a machine without NVLink fabric: its old channel and daemon go.
  if (o.retireComputeDomains && !o.signal.aborted) {
    // Once the pool is empty, nothing is left to watch for.
    const retired: Publisher = new Publisher(o.kc, {
      nodeName: o.nodeName,
      driverName: COMPUTE_DOMAIN_DRIVER,
      log: o.log,
      onSync: () => {
        retired.stop();
      },
    });
    retired.start([]);
    o.publishers.push(retired);
  }
  return true;
}
