import { ApiError, type WatchStreamHandlers, type WrittenRef } from '../../src/kube/client.js';
import {
  METADATA,
  NODES_PATH,
  SLICES_PATH,
  type ClusterApi,
  type ListQuery,
  type Meta,
  type Page,
  type StoredSlice,
} from '../../src/kube/api.js';
import type { Semver } from '../../src/kube/types/version.js';
import { withoutFields, type GatedField } from '../../src/kube/publish/gates.js';

/**
 * An in-memory API server behind our `ClusterApi`: nodes, slices with resourceVersions (a replace of a
 * stale version is a 409), watches that replay history from a resourceVersion or answer 410 once it is
 * compacted, and failures on demand. A fake of our interface, not of Kubernetes: selectors are only the
 * `k=v` ones the publisher and the fleet use.
 */
export type Op =
  | 'version'
  | 'readNode'
  | 'listNodes'
  | 'listSlices'
  | 'createSlice'
  | 'dryRunSlice'
  | 'replaceSlice'
  | 'deleteSlice'
  | 'createEvent';

interface Change {
  rv: number;
  type: string;
  kind: 'node' | 'slice';
  obj: Meta;
}

interface OpenWatch {
  kind: 'node' | 'slice';
  query: Record<string, string>;
  metadataOnly: boolean;
  h: WatchStreamHandlers;
}

export class FakeApi implements ClusterApi {
  readonly nodes = new Map<string, Meta>();
  readonly slices = new Map<string, StoredSlice>();
  readonly events: object[] = [];
  /** Calls by operation, failed ones included. */
  readonly calls = new Map<Op, number>();
  private rv = 1;
  private compacted = 0;
  private history: Change[] = [];
  private readonly watches = new Set<OpenWatch>();
  private readonly faults = new Map<Op, (() => void | Promise<void>)[]>();

  /** The next `times` calls of `op` fail with HTTP `code`. */
  fail(op: Op, times: number, code = 500): void {
    for (let i = 0; i < times; i++)
      this.before(op, () => {
        throw new ApiError(code, `${op}: injected HTTP ${code}`);
      });
  }

  /** Runs `f` at the start of the next call of `op` (it may throw, as the server would answer, or wait). */
  before(op: Op, f: () => void | Promise<void>): void {
    const l = this.faults.get(op) ?? [];
    l.push(f);
    this.faults.set(op, l);
  }

  count(op: Op): number {
    return this.calls.get(op) ?? 0;
  }

  /** Compacts history: every open watch, and any resuming from before now, gets 410 Gone. */
  expire(): void {
    this.compacted = this.rv;
    this.history = [];
    for (const w of [...this.watches]) {
      this.watches.delete(w);
      setImmediate(() => {
        w.h.event('ERROR', { code: 410 });
        w.h.done(null);
      });
    }
  }

  /** Ends every open watch cleanly, as the API server does at its timeout. */
  endWatches(): void {
    for (const w of [...this.watches]) {
      this.watches.delete(w);
      setImmediate(() => {
        w.h.done(null);
      });
    }
  }

  get openWatches(): number {
    return this.watches.size;
  }

  putNode(name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): void {
    const prev = this.nodes.get(name);
    const node: Meta = {
      metadata: {
        name,
        uid: prev?.metadata?.uid ?? `uid-${name}`,
        labels,
        annotations,
        resourceVersion: String(++this.rv),
      },
    };
    this.nodes.set(name, node);
    this.changed(prev ? 'MODIFIED' : 'ADDED', 'node', node);
  }

  removeNode(name: string): void {
    const n = this.nodes.get(name);
    if (!n) return;
    this.nodes.delete(name);
    this.changed('DELETED', 'node', { metadata: { ...n.metadata, resourceVersion: String(++this.rv) } });
  }

  /** Someone else's write: the slice gets a new resourceVersion (and `mutate`'s changes). */
  touchSlice(name: string, mutate: (s: StoredSlice) => void = () => undefined): void {
    const s = this.slices.get(name);
    if (!s) throw new Error(`no slice ${name}`);
    mutate(s);
    s.metadata.resourceVersion = String(++this.rv);
    this.changed('MODIFIED', 'slice', s);
  }

  removeSlice(name: string): void {
    const s = this.slices.get(name);
    if (!s) return;
    this.slices.delete(name);
    s.metadata.resourceVersion = String(++this.rv);
    this.changed('DELETED', 'slice', s);
  }

  async version(): Promise<Semver> {
    await this.call('version');
    return { major: 1, minor: 37, patch: 0 };
  }

  async readNode(name: string): Promise<Meta> {
    await this.call('readNode');
    const n = this.nodes.get(name);
    if (!n) throw new ApiError(404, `node ${name} not found`);
    return structuredClone(n);
  }

  async listNodes(q: ListQuery): Promise<Page<Meta>> {
    await this.call('listNodes');
    return this.page(
      [...this.nodes.values()].filter((n) => labelsMatch(n, q.labelSelector)),
      q,
    );
  }

  async listSlices(q: ListQuery): Promise<Page<StoredSlice>> {
    await this.call('listSlices');
    return this.page(
      [...this.slices.values()].filter((s) => fieldsMatch(s, q.fieldSelector)),
      q,
    );
  }

  async createSlice(body: string): Promise<WrittenRef> {
    await this.call('createSlice');
    const s = JSON.parse(body) as StoredSlice;
    const name =
      s.metadata.name ??
      `${s.metadata.generateName ?? ''}${Math.random().toString(36).slice(2, 7).padEnd(5, 'x')}`;
    if (this.slices.has(name)) throw new ApiError(409, `resourceslices "${name}" already exists`);
    s.metadata = { ...s.metadata, name, resourceVersion: String(++this.rv) };
    this.slices.set(name, s);
    this.changed('ADDED', 'slice', s);
    return { name, resourceVersion: s.metadata.resourceVersion ?? '' };
  }

  /** Fields this fake server drops, as one with their feature gate off would. */
  drops = new Set<GatedField>();

  async dryRunSlice(body: string): Promise<StoredSlice> {
    await this.call('dryRunSlice');
    const [s] = withoutFields([JSON.parse(body) as StoredSlice], this.drops);
    return s as StoredSlice;
  }

  async replaceSlice(name: string, body: string): Promise<WrittenRef> {
    await this.call('replaceSlice');
    const prev = this.slices.get(name);
    if (!prev) throw new ApiError(404, `slice ${name} not found`);
    const s = JSON.parse(body) as StoredSlice;
    const want = s.metadata.resourceVersion;
    if (want !== undefined && want !== prev.metadata.resourceVersion)
      throw new ApiError(409, `slice ${name}: the object has been modified`);
    s.metadata = { ...s.metadata, name, resourceVersion: String(++this.rv) };
    this.slices.set(name, s);
    this.changed('MODIFIED', 'slice', s);
    return { name, resourceVersion: s.metadata.resourceVersion ?? '' };
  }

  async deleteSlice(name: string, resourceVersion?: string): Promise<void> {
    await this.call('deleteSlice');
    const s = this.slices.get(name);
    if (!s) throw new ApiError(404, `slice ${name} not found`);
    if (resourceVersion !== undefined && resourceVersion !== s.metadata.resourceVersion)
      throw new ApiError(409, `slice ${name}: the object has been modified`);
    this.removeSlice(name);
  }

  async createEvent(_namespace: string, event: object): Promise<void> {
    await this.call('createEvent');
    this.events.push(event);
  }

  watch(path: string, query: Record<string, string>, accept: string, h: WatchStreamHandlers): () => void {
    const kind = path === NODES_PATH ? 'node' : path === SLICES_PATH ? 'slice' : null;
    if (!kind) throw new Error(`the fake watches no ${path}`);
    const w: OpenWatch = { kind, query, metadataOnly: accept === METADATA, h };
    const from = query['resourceVersion'] ?? '';
    let aborted = false;
    setImmediate(() => {
      if (aborted) return;
      if (from !== '' && Number(from) < this.compacted) {
        h.event('ERROR', { code: 410 });
        h.done(null);
        return;
      }
      this.watches.add(w);
      if (from === '') {
        const all = kind === 'node' ? [...this.nodes.values()] : [...this.slices.values()];
        for (const o of all) this.deliver(w, 'ADDED', o);
      } else
        for (const c of this.history)
          if (c.rv > Number(from) && c.kind === kind) this.deliver(w, c.type, c.obj);
    });
    return () => {
      aborted = true;
      this.watches.delete(w);
    };
  }

  private async call(op: Op): Promise<void> {
    this.calls.set(op, this.count(op) + 1);
    // As a server would: the answer comes on a later turn.
    await new Promise((r) => setImmediate(r));
    await this.faults.get(op)?.shift()?.();
  }

  private page<T>(items: T[], q: ListQuery): Page<T> {
    const start = Number(q.continue ?? 0);
    const end = q.limit ? start + q.limit : items.length;
    return {
      items: structuredClone(items.slice(start, end)),
      resourceVersion: String(this.rv),
      continue: end < items.length ? String(end) : undefined,
    };
  }

  private changed(type: string, kind: 'node' | 'slice', obj: Meta): void {
    const snapshot = structuredClone(obj);
    this.history.push({ rv: this.rv, type, kind, obj: snapshot });
    for (const w of this.watches) if (w.kind === kind) this.deliver(w, type, snapshot);
  }

  private deliver(w: OpenWatch, type: string, obj: Meta): void {
    if (w.kind === 'node' && !labelsMatch(obj, w.query['labelSelector'])) return;
    if (w.kind === 'slice' && !fieldsMatch(obj as StoredSlice, w.query['fieldSelector'])) return;
    const sent = w.metadataOnly ? { metadata: obj.metadata } : obj;
    setImmediate(() => {
      if (this.watches.has(w)) w.h.event(type, structuredClone(sent));
    });
  }
}

function pairs(selector: string | undefined): [string, string][] {
  return (selector ?? '')
    .split(',')
    .filter(Boolean)
    .map((p) => p.split('=') as [string, string]);
}

function labelsMatch(n: Meta, selector: string | undefined): boolean {
  return pairs(selector).every(([k, v]) => n.metadata?.labels?.[k] === v);
}

function fieldsMatch(s: StoredSlice, selector: string | undefined): boolean {
  return pairs(selector).every(([k, v]) =>
    k === 'spec.driver' ? s.spec.driver === v : k === 'spec.nodeName' ? s.spec.nodeName === v : false,
  );
}
