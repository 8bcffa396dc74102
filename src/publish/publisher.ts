import { createHash } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ResourceSlice } from '../k8s/resource.js';

/**
 * Keeps this node's pool on the API server equal to the desired slices: creates what is missing,
 * updates in place what differs, deletes extras, and does nothing when nothing changed. A watch on the
 * pool brings slices back when someone deletes or edits them (the kubelet deletes a node's slices when
 * it restarts); API errors back off exponentially.
 */

const SLICES = { group: 'resource.k8s.io', version: 'v1', plural: 'resourceslices' } as const;

/** A slice as the API server returns it: ours plus server-set metadata. */
type StoredSlice = ResourceSlice & {
  metadata: ResourceSlice['metadata'] & { name?: string; resourceVersion?: string };
};

export interface PublisherOptions {
  nodeName: string;
  driverName: string;
  log: Logger;
  /** Called after every sync with how many writes it made. */
  onSync?: (writes: number, devices: number) => void;
}

/** Key order and absent-vs-empty differences aside, are two specs the same? */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>)
        .filter(([, x]) => x !== undefined && x !== null)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, x]) => [k, canonical(x)]),
    );
  }
  return v;
}

const same = (a: unknown, b: unknown): boolean =>
  JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

/** A spec's content apart from the pool generation, which every republish bumps: equal specs, equal keys. */
export function specKey(spec: ResourceSlice['spec']): string {
  return createHash('sha1')
    .update(JSON.stringify(canonical({ ...spec, pool: { ...spec.pool, generation: 0 } })))
    .digest('base64');
}

/** The slice index encoded in an indexed generateName (`00003-gpu.nvidia.com-node-abcde` → 3). */
export function indexOf(name: string | undefined, driver: string, node: string): number | null {
  if (!name) return null;
  const m = /^([0-9a-f]{5,})-(.*)-[a-z0-9]{5}$/.exec(name);
  if (!m || m[2] !== `${driver}-${node}`) return null;
  return Number.parseInt(m[1] ?? '', 16);
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
    const owner = {
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
    const existing = list.items;
    const byIndex = new Map<number, StoredSlice>();
    const extras: StoredSlice[] = [];
    for (const s of existing) {
      const i = indexOf(s.metadata.name, driverName, nodeName);
      if (i === null || i >= this.desired.length || byIndex.has(i)) extras.push(s);
      else byIndex.set(i, s);
    }
    const generation = Math.max(0, ...existing.map((s) => s.spec.pool.generation));
    const changed = this.desired.filter((d, i) => {
      const cur = byIndex.get(i);
      return (
        !cur ||
        !same(
          { ...cur.spec, pool: { ...cur.spec.pool, generation: 0 } },
          { ...d.spec, pool: { ...d.spec.pool, generation: 0 } },
        )
      );
    });
    if (
      changed.length === 0 &&
      extras.length === 0 &&
      existing.every((s) => s.spec.pool.generation === generation)
    )
      return 0;
    const next = generation + 1;
    let writes = 0;
    for (const [i, d] of this.desired.entries()) {
      const spec = { ...d.spec, pool: { ...d.spec.pool, generation: next } };
      const cur = byIndex.get(i);
      if (cur?.metadata.name) {
        await this.api.replaceClusterCustomObject({
          ...SLICES,
          name: cur.metadata.name,
          body: { ...cur, spec },
        });
      } else {
        await this.api.createClusterCustomObject({
          ...SLICES,
          body: {
            apiVersion: d.apiVersion,
            kind: d.kind,
            metadata: { generateName: d.metadata.generateName, ownerReferences: [owner] },
            spec,
          },
        });
      }
      writes++;
    }
    for (const s of extras) {
      if (s.metadata.name) await this.api.deleteClusterCustomObject({ ...SLICES, name: s.metadata.name });
      writes++;
    }
    this.o.log.info({ generation: next, slices: this.desired.length, writes }, 'published ResourceSlices');
    return writes;
  }
}
