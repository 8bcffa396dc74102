import { ApiError, type WatchStreamHandlers, type WrittenRef } from '../../src/kube/client.js';
import type { ListQuery, Page } from '../../src/kube/api.js';
import type { FaultApi } from '../../src/kube/gpufault/api.js';
import { GPUFAULTS_PATH, type NewGpuFault } from '../../src/model/fault/resource.js';
import type { StatusPatch } from '../../src/model/fault/status.js';

/**
 * An in-memory API server of GpuFaults behind our `FaultApi`, as `fake-api.ts` is for nodes and slices:
 * objects kept as sent (a bad one too, as under a looser CRD), resourceVersions and generations, watches
 * that replay history or answer 410 once it is compacted, a CRD that can be missing, failures on demand.
 */
export type FaultOp = 'listFaults' | 'readFault' | 'createFault' | 'deleteFault' | 'patchFaultStatus';

type Obj = Record<string, unknown> & {
  metadata: { name: string; uid?: string; generation?: number; resourceVersion?: string };
  spec?: unknown;
  status?: unknown;
};

interface Change {
  rv: number;
  type: string;
  obj: Obj;
}

/** RFC 7386: objects merge, null removes, anything else (lists included) replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const out = new Map(
    target !== null && typeof target === 'object' && !Array.isArray(target) ? Object.entries(target) : [],
  );
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) out.delete(k);
    else out.set(k, mergePatch(out.get(k), v));
  }
  return Object.fromEntries(out);
}

export class FakeFaultApi implements FaultApi {
  readonly objects = new Map<string, Obj>();
  readonly patches: { name: string; patch: StatusPatch }[] = [];
  readonly calls = new Map<FaultOp | 'watch', number>();
  /** False: the CRD is not installed, every request answers 404. */
  installed = true;
  private rv = 1;
  private uid = 0;
  private compacted = 0;
  private history: Change[] = [];
  private readonly watches = new Set<WatchStreamHandlers>();
  private readonly faults = new Map<FaultOp, (() => void)[]>();

  fail(op: FaultOp, times: number, code = 500): void {
    const l = this.faults.get(op) ?? [];
    for (let i = 0; i < times; i++)
      l.push(() => {
        throw new ApiError(code, `${op}: injected HTTP ${code}`);
      });
    this.faults.set(op, l);
  }

  count(op: FaultOp | 'watch'): number {
    return this.calls.get(op) ?? 0;
  }

  get openWatches(): number {
    return this.watches.size;
  }

  /** Creates or replaces an object as given (no validation); a changed spec is a new generation. */
  put(obj: Record<string, unknown>): void {
    const o = structuredClone(obj) as Obj;
    const prev = this.objects.get(o.metadata.name);
    const specChanged = !prev || JSON.stringify(prev.spec) !== JSON.stringify(o.spec);
    o.metadata = {
      ...o.metadata,
      uid: prev?.metadata.uid ?? `uid-${++this.uid}`,
      generation: (prev?.metadata.generation ?? 0) + (specChanged ? 1 : 0),
      resourceVersion: String(++this.rv),
    };
    if (prev && o.status === undefined && prev.status !== undefined) o.status = prev.status;
    this.objects.set(o.metadata.name, o);
    this.changed(prev ? 'MODIFIED' : 'ADDED', o);
  }

  remove(name: string): void {
    const o = this.objects.get(name);
    if (!o) return;
    this.objects.delete(name);
    o.metadata.resourceVersion = String(++this.rv);
    this.changed('DELETED', o);
  }

  /** Compacts history: open watches, and any resuming from before now, get 410 Gone. */
  expire(): void {
    this.compacted = this.rv;
    this.history = [];
    for (const h of [...this.watches]) {
      this.watches.delete(h);
      setImmediate(() => {
        h.event('ERROR', { code: 410 });
        h.done(null);
      });
    }
  }

  /** The CRD is deleted: its objects go, open watches end with 404, as do later requests. */
  uninstall(): void {
    for (const name of [...this.objects.keys()]) this.remove(name);
    this.installed = false;
    for (const h of [...this.watches]) {
      this.watches.delete(h);
      setImmediate(() => {
        h.done(new ApiError(404, 'the server could not find the requested resource'));
      });
    }
  }

  async listFaults(q: ListQuery): Promise<Page<unknown>> {
    await this.call('listFaults');
    const all = [...this.objects.values()];
    const start = Number(q.continue ?? 0);
    const end = q.limit ? start + q.limit : all.length;
    return {
      items: structuredClone(all.slice(start, end)),
      resourceVersion: String(this.rv),
      continue: end < all.length ? String(end) : undefined,
    };
  }

  async readFault(name: string): Promise<unknown> {
    await this.call('readFault');
    const o = this.objects.get(name);
    if (!o) throw new ApiError(404, `gpufaults "${name}" not found`);
    return structuredClone(o);
  }

  async createFault(f: NewGpuFault): Promise<WrittenRef> {
    await this.call('createFault');
    const name =
      'name' in f.metadata
        ? f.metadata.name
        : `${f.metadata.generateName}${(++this.uid).toString(36).padStart(5, '0')}`;
    if (this.objects.has(name)) throw new ApiError(409, `gpufaults "${name}" already exists`);
    this.put({ ...structuredClone(f), metadata: { name } });
    return { name, resourceVersion: String(this.rv) };
  }

  async deleteFault(name: string): Promise<void> {
    await this.call('deleteFault');
    if (!this.objects.has(name)) throw new ApiError(404, `gpufaults "${name}" not found`);
    this.remove(name);
  }

  async patchFaultStatus(name: string, patch: StatusPatch): Promise<void> {
    await this.call('patchFaultStatus');
    const o = this.objects.get(name);
    if (!o) throw new ApiError(404, `gpufaults "${name}" not found`);
    this.patches.push({ name, patch: structuredClone(patch) });
    o.status = (mergePatch({ status: o.status }, patch) as { status?: unknown }).status;
    o.metadata.resourceVersion = String(++this.rv);
    this.changed('MODIFIED', o);
  }

  watch(path: string, query: Record<string, string>, _accept: string, h: WatchStreamHandlers): () => void {
    if (path !== GPUFAULTS_PATH) throw new Error(`the fake watches no ${path}`);
    this.calls.set('watch', this.count('watch') + 1);
    const from = query['resourceVersion'] ?? '';
    let aborted = false;
    setImmediate(() => {
      if (aborted) return;
      if (!this.installed) {
        h.done(new ApiError(404, 'the server could not find the requested resource'));
        return;
      }
      if (from !== '' && Number(from) < this.compacted) {
        h.event('ERROR', { code: 410 });
        h.done(null);
        return;
      }
      this.watches.add(h);
      for (const c of this.history) if (c.rv > Number(from || 0)) this.deliver(h, c.type, c.obj);
    });
    return () => {
      aborted = true;
      this.watches.delete(h);
    };
  }

  private async call(op: FaultOp): Promise<void> {
    this.calls.set(op, this.count(op) + 1);
    await new Promise((r) => setImmediate(r));
    if (!this.installed) throw new ApiError(404, 'the server could not find the requested resource');
    this.faults.get(op)?.shift()?.();
  }

  private changed(type: string, obj: Obj): void {
    const snapshot = structuredClone(obj);
    this.history.push({ rv: this.rv, type, obj: snapshot });
    for (const h of this.watches) this.deliver(h, type, snapshot);
  }

  private deliver(h: WatchStreamHandlers, type: string, obj: Obj): void {
    setImmediate(() => {
      if (this.watches.has(h)) h.event(type, structuredClone(obj));
    });
  }
}

/** A GpuFault object as the API server would hold it, created at a fixed time. */
export function faultObject(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'fakegpu.dev/v1alpha1',
    kind: 'GpuFault',
    metadata: { name, uid: `uid-${name}`, generation: 1, creationTimestamp: '2026-12-01T00:00:00Z' },
    spec: { seed: 0, ...spec },
  };
}
