import type { KubeConfig } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { fullJitter, LIST_BACKOFF } from './backoff.js';
import {
  ApiClient,
  ApiError,
  clientOf,
  serverVersion,
  transientListError,
  type WatchSource,
  type WrittenRef,
} from './client.js';
import type { ResourceSlice } from './types/resource.js';
import type { Semver } from './types/version.js';

/**
 * What the publisher and the fleet ask of the API server, as one interface: the real one over
 * `ApiClient`, and in tests a fake that fails, conflicts and expires on demand. Watches go by path
 * (`NODES_PATH`, `SLICES_PATH`) so that `ResumableWatch` drives either.
 */

export const NODES_PATH = '/api/v1/nodes';
export const SLICES_PATH = '/apis/resource.k8s.io/v1/resourceslices';
/** Objects as metadata only: what the fleet reads of nodes, and of slices it watches. */
export const METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
/** What a slice write asks back: its metadata, or the whole object from a server that cannot. */
export const WRITE_ANSWER = `${METADATA}, application/json`;
export const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/** A slice as the API server returns it: ours plus server-set metadata. */
export type StoredSlice = ResourceSlice & {
  metadata: ResourceSlice['metadata'] & { name?: string; resourceVersion?: string };
};

/** What the fleet and the publisher read of an object's metadata. */
export interface ObjectMeta {
  name?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid?: string }[];
}

/** Any object read as metadata. */
export interface Meta {
  metadata?: ObjectMeta;
}

export interface ListQuery {
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  limit?: number | undefined;
  continue?: string | undefined;
}

export interface Page<T> {
  items: T[];
  resourceVersion: string;
  /** The token of the next page; undefined: this was the last. */
  continue: string | undefined;
}

export interface ClusterApi extends WatchSource {
  version(): Promise<Semver>;
  readNode(name: string): Promise<Meta>;
  /** Nodes as metadata: a KWOK node's status would be four fifths of the list. */
  listNodes(q: ListQuery): Promise<Page<Meta>>;
  listSlices(q: ListQuery): Promise<Page<StoredSlice>>;
  /**
   * Creates a slice from its JSON text: the name it carries, or one the API server makes of its
   * generateName. `timeoutMs`, where given, is the request's deadline instead of the client's: a writer
   * whose term ends sooner aborts it then (`fleet/reconciler.ts`).
   */
  createSlice(body: string, timeoutMs?: number): Promise<WrittenRef>;
  /** What the server would store of a slice, stored nowhere (`dryRun=All`): which fields it keeps. */
  dryRunSlice(body: string): Promise<StoredSlice>;
  /** Replaces a slice; with a resourceVersion in the body, only that version of it (else 409). */
  replaceSlice(name: string, body: string, timeoutMs?: number): Promise<WrittenRef>;
  /** Rejects with `ApiError` 404 when the slice is already gone. */
  /** With `resourceVersion`, only that version of it (else 409). */
  deleteSlice(name: string, resourceVersion?: string, timeoutMs?: number): Promise<void>;
  createEvent(namespace: string, event: object): Promise<void>;
}

export class KubeApi implements ClusterApi {
  private readonly http: ApiClient;

  constructor(kc: KubeConfig | ApiClient) {
    this.http = kc instanceof ApiClient ? kc : clientOf(kc);
  }

  version(): Promise<Semver> {
    return serverVersion(this.http);
  }

  async readNode(name: string): Promise<Meta> {
    return JSON.parse(await this.http.send('GET', `${NODES_PATH}/${name}`, undefined, METADATA)) as Meta;
  }

  listNodes(q: ListQuery): Promise<Page<Meta>> {
    return this.list<Meta>(NODES_PATH, q, METADATA_LIST);
  }

  listSlices(q: ListQuery): Promise<Page<StoredSlice>> {
    return this.list<StoredSlice>(SLICES_PATH, q, 'application/json');
  }

  // Only the name and resourceVersion of a written slice are read: asked as metadata, the answer to a
  // 30 kB dynamic-MIG slice is under 1 kB, which the API server need not serialise nor we receive.
  createSlice(body: string, timeoutMs?: number): Promise<WrittenRef> {
    return this.http.write('POST', SLICES_PATH, body, WRITE_ANSWER, timeoutMs);
  }

  async dryRunSlice(body: string): Promise<StoredSlice> {
    return JSON.parse(await this.http.send('POST', `${SLICES_PATH}?dryRun=All`, body)) as StoredSlice;
  }

  replaceSlice(name: string, body: string, timeoutMs?: number): Promise<WrittenRef> {
    return this.http.write('PUT', `${SLICES_PATH}/${name}`, body, WRITE_ANSWER, timeoutMs);
  }

  async deleteSlice(name: string, resourceVersion?: string, timeoutMs?: number): Promise<void> {
    const body = resourceVersion
      ? JSON.stringify({ apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion } })
      : undefined;
    await this.http.send('DELETE', `${SLICES_PATH}/${name}`, body, undefined, undefined, timeoutMs);
  }

  async createEvent(namespace: string, event: object): Promise<void> {
    await this.http.send(
      'POST',
      `/apis/events.k8s.io/v1/namespaces/${namespace}/events`,
      JSON.stringify(event),
    );
  }

  watch(...a: Parameters<WatchSource['watch']>): ReturnType<WatchSource['watch']> {
    return this.http.watch(...a);
  }

  private list<T>(path: string, q: ListQuery, accept: string): Promise<Page<T>> {
    return listPage<T>(this.http, path, q, accept);
  }
}

/** Attempts of one list request that the API server answered "not now" (see `transientListError`). */
export const LIST_ATTEMPTS = 8;

/**
 * One page of a list, any resource. A page the API server cannot serve yet (its watch cache behind the
 * resourceVersion asked for, or priority and fairness pushing back) is asked for again after a backoff,
 * so a burst of writes does not end a list.
 */
/** Every item of a paginated list, page by page (500 a page), as the API server gives them. */
export async function listEvery<T>(
  list: (q: ListQuery) => Promise<Page<T>>,
  q: ListQuery = {},
): Promise<T[]> {
  const items: T[] = [];
  await forEachPage(list, (page) => items.push(...page), q);
  return items;
}

/** Each page of a paginated list (500 items unless `q.limit` says), handed to `each` as it arrives. */
export async function forEachPage<T>(
  list: (q: ListQuery) => Promise<Page<T>>,
  each: (items: T[]) => void,
  q: ListQuery = {},
): Promise<void> {
  let next: string | undefined;
  do {
    const page = await list({ limit: 500, ...q, continue: next });
    each(page.items);
    next = page.continue;
  } while (next !== undefined);
}

export async function listPage<T>(
  http: Pick<ApiClient, 'send'>,
  path: string,
  q: ListQuery,
  accept: string,
  random: () => number = Math.random,
): Promise<Page<T>> {
  const s = new URLSearchParams();
  if (q.labelSelector) s.set('labelSelector', q.labelSelector);
  if (q.fieldSelector) s.set('fieldSelector', q.fieldSelector);
  if (q.limit) s.set('limit', String(q.limit));
  if (q.continue) s.set('continue', q.continue);
  let text: string;
  for (let attempt = 1; ; attempt++) {
    try {
      text = await http.send('GET', `${path}?${s.toString()}`, undefined, accept);
      break;
    } catch (e) {
      if (attempt >= LIST_ATTEMPTS || !(e instanceof ApiError) || !transientListError(e.code, e.message))
        throw e;
      await sleep(fullJitter(attempt, LIST_BACKOFF, random));
    }
  }
  const page = JSON.parse(text) as {
    items: T[] | null;
    metadata?: { continue?: string; resourceVersion?: string };
  };
  return {
    // An empty PartialObjectMetadataList has `items: null`.
    items: page.items ?? [],
    resourceVersion: page.metadata?.resourceVersion ?? '',
    continue: page.metadata?.continue || undefined,
  };
}
