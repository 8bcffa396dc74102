import { CoreV1Api, CustomObjectsApi, type KubeConfig, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ResourceSlice } from '../k8s/resource.js';
import { keyed, planPool, published, SLICES, writeSlice, type NodeOwner, type StoredSlice } from './pool.js';

/**
 * Keeps this node's pool on the API server equal to the desired slices: creates what is missing,
 * updates in place what differs, deletes extras, and does nothing when nothing changed. A watch on the
 * pool brings slices back when someone deletes or edits them (the kubelet deletes a node's slices when
 * it restarts); API errors back off exponentially.
 */

export interface PublisherOptions {
  nodeName: string;
  driverName: string;
  log: Logger;
  /** Called after every sync with how many writes it made. */
  onSync?: (writes: number, devices: number) => void;
}

export class Publisher {
  private readonly api: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private desired: ResourceSlice[] = [];
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private failures = 0;
  private stopped = false;
  private abortWatch: (() => void) | null = null;

  constructor(
    private readonly kc: KubeConfig,
    private readonly o: PublisherOptions,
  ) {
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  start(desired: ResourceSlice[]): void {
    this.desired = desired;
    this.schedule(0);
    void this.watch();
  }

  private isStopped(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.abortWatch?.();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.sync();
    }, ms);
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    const w = new Watch(this.kc);
    try {
      const req = await w.watch(
        '/apis/resource.k8s.io/v1/resourceslices',
        { fieldSelector: `spec.nodeName=${this.o.nodeName},spec.driver=${this.o.driverName}` },
        () => {
          this.schedule(200);
        },
        () => {
          // The watch ended (timeout, API restart): resync and watch again.
          if (!this.stopped) setTimeout(() => void this.watch(), 1000);
          this.schedule(200);
        },
      );
      this.abortWatch = () => {
        req.abort();
      };
      // stop() may have come while the watch was connecting (a read TypeScript cannot see change).
      if (this.isStopped()) req.abort();
    } catch (e) {
      this.o.log.warn({ err: e }, 'watching ResourceSlices failed; retrying');
      setTimeout(() => void this.watch(), 2000);
    }
  }

  /** One reconcile pass; re-runs if something asked for a sync while it ran. */
  async sync(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      const writes = await this.reconcile();
      this.failures = 0;
      this.o.onSync?.(
        writes,
        this.desired.reduce((n, s) => n + (s.spec.devices?.length ?? 0), 0),
      );
      // Safety net besides the watch.
      this.schedule(60_000);
    } catch (e) {
      this.failures++;
      const delay = Math.min(30_000, 500 * 2 ** Math.min(this.failures, 6));
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

  private async reconcile(): Promise<number> {
    const { nodeName, driverName } = this.o;
    const node = await this.core.readNode({ name: nodeName });
    const owner: NodeOwner = {
      apiVersion: 'v1',
      kind: 'Node',
      name: nodeName,
      uid: node.metadata?.uid ?? '',
      controller: true,
    };
    const list = (await this.api.listClusterCustomObject({
      ...SLICES,
      fieldSelector: `spec.nodeName=${nodeName},spec.driver=${driverName}`,
    })) as { items: StoredSlice[] };
    const plan = planPool(
      list.items.map((x) => published(x, true)),
      keyed(this.desired),
      driverName,
      nodeName,
    );
    if (!plan) return 0;
    let writes = 0;
    for (const w of plan.writes) {
      await writeSlice(this.api, w, plan.generation, owner);
      writes++;
    }
    for (const name of plan.deletes) {
      await this.api.deleteClusterCustomObject({ ...SLICES, name });
      writes++;
    }
    const next = plan.generation;
    this.o.log.info({ generation: next, slices: this.desired.length, writes }, 'published ResourceSlices');
    return writes;
  }
}
