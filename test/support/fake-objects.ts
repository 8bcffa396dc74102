import { ApiError } from '../../src/kube/client.js';
import type { ObjectApi } from '../../src/kube/objects.js';
import type { ListQuery } from '../../src/kube/api.js';

/**
 * An in-memory store behind our `ObjectApi`: objects by path, resourceVersions (a replace of a stale
 * version is a 409), finalizers (a delete only marks an object that has some; it goes once they are
 * dropped), JSON merge patches, and the label selectors our controllers use (`k`, `k=v`). A fake of
 * our interface, not of Kubernetes.
 */

type Obj = { metadata: Record<string, unknown> & { name: string; namespace?: string } } & Record<
  string,
  unknown
>;

const PATH =
  /^(\/api\/v1|\/apis\/[^/]+\/[^/]+)(?:\/namespaces\/([^/]+))?\/([a-z]+)(?:\/([^/]+))?(\/status)?$/;

function parse(path: string): { base: string; ns: string; plural: string; name: string; status: boolean } {
  const m = PATH.exec(path);
  if (!m) throw new Error(`fake: cannot parse ${path}`);
  return {
    base: m[1] ?? '',
    ns: m[2] ?? '',
    plural: m[3] ?? '',
    name: m[4] ?? '',
    status: m[5] !== undefined,
  };
}

const keyOf = (base: string, ns: string, plural: string, name: string) => `${base}|${ns}|${plural}|${name}`;

function merge(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  return Object.fromEntries(
    [...new Set([...Object.keys(out), ...Object.keys(patch)])].flatMap((k) => {
      const v: unknown = (patch as Record<string, unknown>)[k];
      if (v === null) return [];
      return [[k, k in patch ? merge(out[k], v) : out[k]]];
    }),
  );
}

function matches(labels: Record<string, string> | undefined, selector: string | undefined): boolean {
  if (!selector) return true;
  return selector.split(',').every((term) => {
    const [k, v] = term.split('=');
    if (k === undefined) return true;
    return v === undefined ? labels?.[k] !== undefined : labels?.[k] === v;
  });
}

export class FakeObjects implements ObjectApi {
  readonly objects = new Map<string, Obj>();
  private rv = 1;
  private uid = 1;
  readonly calls: string[] = [];
  /** Fails the next call whose `METHOD path` starts with this, once. */
  failNext: { prefix: string; code: number } | null = null;

  private check(what: string): void {
    this.calls.push(what);
    if (this.failNext && what.startsWith(this.failNext.prefix)) {
      const code = this.failNext.code;
      this.failNext = null;
      throw new ApiError(code, `fake: ${what} failed with ${code}`);
    }
  }

  /** Puts an object as a client's create would, at `collection`; answers it. */
  seed(collection: string, obj: object): Obj {
    const p = parse(collection);
    const o = structuredClone(obj) as Obj;
    o.metadata.uid ??= `uid-${this.uid++}`;
    o.metadata.resourceVersion = String(this.rv++);
    if (p.ns) o.metadata.namespace = p.ns;
    this.objects.set(keyOf(p.base, p.ns, p.plural, o.metadata.name), o);
    return structuredClone(o);
  }

  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the test names the kind it reads
  read<T>(path: string): T | undefined {
    const p = parse(path);
    const o = this.objects.get(keyOf(p.base, p.ns, p.plural, p.name));
    return o ? (structuredClone(o) as T) : undefined;
  }

  async list<T>(collection: string, q: ListQuery = {}): Promise<T[]> {
    this.check(`LIST ${collection}`);
    const p = parse(collection);
    const out: T[] = [];
    for (const [k, o] of this.objects) {
      const [base, ns, plural] = k.split('|');
      if (base !== p.base || plural !== p.plural || (p.ns && ns !== p.ns)) continue;
      if (!matches(o.metadata['labels'] as Record<string, string> | undefined, q.labelSelector)) continue;
      out.push(structuredClone(o) as T);
    }
    return Promise.resolve(out);
  }

  async get<T>(path: string): Promise<T | null> {
    this.check(`GET ${path}`);
    return Promise.resolve((this.read<T>(path) ?? null) as T | null);
  }

  async create<T>(collection: string, obj: object): Promise<T> {
    this.check(`POST ${collection}`);
    const p = parse(collection);
    const name = (obj as Obj).metadata.name;
    if (this.objects.has(keyOf(p.base, p.ns, p.plural, name)))
      throw new ApiError(409, `fake: ${name} exists`);
    return Promise.resolve(this.seed(collection, obj) as T);
  }

  async replace<T>(path: string, obj: object): Promise<T> {
    this.check(`PUT ${path}`);
    const p = parse(path);
    const k = keyOf(p.base, p.ns, p.plural, p.name);
    const cur = this.objects.get(k);
    if (!cur) throw new ApiError(404, `fake: ${path} not found`);
    const want = (obj as Obj).metadata.resourceVersion;
    if (want !== undefined && want !== cur.metadata.resourceVersion)
      throw new ApiError(409, 'fake: conflict');
    const next = structuredClone(obj) as Obj;
    next.metadata = { ...next.metadata, uid: cur.metadata.uid, resourceVersion: String(this.rv++) };
    this.objects.set(k, next);
    return Promise.resolve(structuredClone(next) as T);
  }

  async patch<T>(path: string, patch: object): Promise<T> {
    this.check(`PATCH ${path}`);
    const p = parse(path);
    const k = keyOf(p.base, p.ns, p.plural, p.name);
    const cur = this.objects.get(k);
    if (!cur) throw new ApiError(404, `fake: ${path} not found`);
    const want = (patch as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (want !== undefined && want !== cur.metadata.resourceVersion)
      throw new ApiError(409, 'fake: conflict');
    const next = merge(cur, patch) as Obj;
    next.metadata.resourceVersion = String(this.rv++);
    const fin = next.metadata['finalizers'] as string[] | undefined;
    if (next.metadata['deletionTimestamp'] && (!fin || fin.length === 0)) this.objects.delete(k);
    else this.objects.set(k, next);
    return Promise.resolve(structuredClone(next) as T);
  }

  async delete(path: string, resourceVersion?: string): Promise<boolean> {
    this.check(`DELETE ${path}`);
    const p = parse(path);
    const k = keyOf(p.base, p.ns, p.plural, p.name);
    const cur = this.objects.get(k);
    if (!cur) return Promise.resolve(false);
    if (resourceVersion !== undefined && resourceVersion !== cur.metadata.resourceVersion)
      throw new ApiError(409, 'fake: conflict');
    const fin = cur.metadata['finalizers'] as string[] | undefined;
    if (fin && fin.length > 0) {
      cur.metadata['deletionTimestamp'] ??= '2026-12-01T00:00:00Z';
      cur.metadata.resourceVersion = String(this.rv++);
    } else this.objects.delete(k);
    return Promise.resolve(true);
  }
}
