import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KubeApi, SLICES_PATH, type ClusterApi } from '../api.js';
import { fullJitter, PUBLISH_BACKOFF } from '../backoff.js';
import { ApiError } from '../client.js';
import type { ResourceSlice } from '../types/resource.js';
import { ResumableWatch } from '../watch.js';
import { keepTaintTimes, keyed, planPool, published, writeSlice, type NodeOwner } from './pool.js';

/**
 * Keeps this node's pool on the API server equal to the desired slices: creates what is missing,
 * updates in place what differs, deletes extras, and does nothing when nothing changed. A watch on the
 * pool brings slices back when someone deletes or edits them (the kubelet deletes a node's slices when
 * it restarts); API errors, timeouts and conflicts (someone wrote a slice between our list and our
 * update) back off exponentially with jitter, and the next pass lists again.
 */

export interface PublisherOptions {
  nodeName: string;
  driverName: string;
  log: Logger;
  /** Called after every sync with how many writes it made and the slices it made the pool equal to. */
  onSync?: (writes: number, devices: number, slices: readonly ResourceSlice[]) => void;
  /** The API server; default: the kubeconfig's, with `REQUEST_TIMEOUT_MS` per request. */
  api?: ClusterApi;
  /** The backoff's random source, for tests. */
  random?: () => number;
}

export class Publisher {
  private readonly api: ClusterApi;
  private desired: ResourceSlice[] = [];
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private failures = 0;
  private stopped = false;
  private watch: ResumableWatch | null = null;

  constructor(
    kc: KubeConfig,
    private readonly o: PublisherOptions,
  ) {
    this.api = o.api ?? new KubeApi(kc);
  }

  start(desired: ResourceSlice[]): void {
    this.desired = desired;
    this.schedule(0);
    const { nodeName, driverName, log } = this.o;
    const w = new ResumableWatch(this.api, SLICES_PATH, { fieldSelector: this.selector() }, '', {
      event: () => {
        this.schedule(200);
      },
      // The pool is a handful of slices: a fresh watch replays them, and the sync that follows lists.
      expired: () => {
        w.restart('');
        this.schedule(200);
      },
      failed: (err) => {
        log.warn(
          { node: nodeName, driver: driverName, err: err instanceof Error ? err.message : String(err) },
          'watching ResourceSlices failed; retrying',
        );
      },
    });
    this.watch = w;
  }

  /** New desired slices (a device got a taint): written at once, the watch kept. */
  update(desired: ResourceSlice[]): void {
    this.desired = desired;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.watch?.stop();
  }

  private selector(): string {
    return `spec.nodeName=${this.o.nodeName},spec.driver=${this.o.driverName}`;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.sync();
    }, ms);
  }

  /** One reconcile pass; re-runs if something asked for a sync while it ran. */
  async sync(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      // What this pass publishes: an update while it runs is the next pass's.
      const desired = this.desired;
      const writes = await this.reconcile(desired);
      this.failures = 0;
      this.o.onSync?.(
        writes,
        desired.reduce((n, s) => n + (s.spec.devices?.length ?? 0), 0),
        desired,
      );
      // Safety net besides the watch.
      this.schedule(60_000);
    } catch (e) {
      this.failures++;
      const delay = fullJitter(this.failures, PUBLISH_BACKOFF, this.o.random);
      this.o.log.warn(
        { err: e instanceof Error ? e.message : String(e), retryInMs: delay },
        'publishing ResourceSlices failed',
      );
      this.schedule(delay);
    } finally {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.schedule(0);
      }
    }
  }

  private async reconcile(desired: readonly ResourceSlice[]): Promise<number> {
    const { nodeName, driverName } = this.o;
    const node = await this.api.readNode(nodeName);
    const owner: NodeOwner = {
      apiVersion: 'v1',
      kind: 'Node',
      name: nodeName,
      uid: node.metadata?.uid ?? '',
      controller: true,
    };
    const list = await this.api.listSlices({ fieldSelector: this.selector() });
    const plan = planPool(
      list.items.map((x) => published(x, true)),
      keyed(desired),
      driverName,
      nodeName,
    );
    if (!plan) return 0;
    const stored = new Map(list.items.map((x) => [x.metadata.name ?? '', x.spec]));
    let writes = 0;
    for (const w of plan.writes) {
      const slice = keepTaintTimes(w.desired.slice, w.existing ? stored.get(w.existing.name) : undefined);
      await writeSlice(this.api, { ...w, desired: { ...w.desired, slice } }, plan.generation, owner);
      writes++;
    }
    for (const name of plan.deletes) {
      try {
        await this.api.deleteSlice(name);
      } catch (e) {
        // Gone already is what was wanted.
        if (!(e instanceof ApiError && e.code === 404)) throw e;
      }
      writes++;
    }
    const next = plan.generation;
    this.o.log.info({ generation: next, slices: desired.length, writes }, 'published ResourceSlices');
    return writes;
  }
}
