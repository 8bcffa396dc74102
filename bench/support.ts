/**
 * What the cluster benchmarks share: raw HTTPS to the API server (the least a client can do per
 * request, the ceilings' client), bounded parallelism, the KWOK nodes, and a `fakegpu fleet` process
 * started as users start it.
 */
import { type Log, Progress, streamLog } from '../src/process/progress.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request, type RequestOptions } from 'node:https';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  clusterDown,
  clusterUp,
  FLEET_DCGM,
  FLEET_HTTP,
  FLEET_MALLOC_ENV,
  FLEET_NODE_FLAGS,
  REPO_ROOT,
} from '../src/local-cluster/cluster.js';
import { cacheRoot } from '../src/local-cluster/build.js';
import { FakegpuError, show } from '../src/errors.js';
import { LIST_ATTEMPTS } from '../src/kube/api.js';
import { fullJitter, LIST_BACKOFF, PUBLISH_BACKOFF } from '../src/kube/backoff.js';
import { transientListError } from '../src/kube/client.js';
import { KWOK_ANNOTATION } from '../src/kube/kwok.js';

/** Lines on stderr after `name: `; on a terminal, a phase's progress redraws one line there. */
export const logger = (name: string): Log => streamLog(`${name}: `, process.stderr);
export const seconds = (t0: number): number => (performance.now() - t0) / 1000;
export const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

/** A request that failed on a kept-alive connection the server had closed: it may be sent again. */
class StaleSocket extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

/** Raw HTTPS to the API server: the least a client can do per request. */
export class Raw {
  private constructor(
    private readonly base: URL,
    private readonly o: RequestOptions,
  ) {}

  static async of(kc: KubeConfig, inFlight: number): Promise<Raw> {
    const o: RequestOptions = {};
    await kc.applyToHTTPSOptions(o);
    const server = kc.getCurrentCluster()?.server ?? '';
    return new Raw(new URL(server), {
      ...o,
      agent: new Agent({ keepAlive: true, maxSockets: inFlight, ca: o.ca, cert: o.cert, key: o.key }),
    });
  }

  /**
   * One request. A kept-alive connection the API server closed while this process was busy (rendering
   * 10,000 dynamic-MIG nodes blocks it for minutes, past the server's 90 s idle timeout) fails the
   * next request with ECONNRESET before it was read: that one is sent again on a fresh connection.
   */
  async send(
    method: string,
    path: string,
    body?: string,
    accept = 'application/json',
    contentType = 'application/json',
  ): Promise<{ status: number; text: string; bytes: Buffer }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.sendOnce(method, path, body, accept, contentType);
      } catch (e) {
        if (attempt >= 3 || !(e instanceof StaleSocket)) throw e instanceof StaleSocket ? e.cause : e;
      }
    }
  }

  private sendOnce(
    method: string,
    path: string,
    body: string | undefined,
    accept: string,
    contentType: string,
  ): Promise<{ status: number; text: string; bytes: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          ...this.o,
          hostname: this.base.hostname,
          port: this.base.port,
          method,
          path,
          headers: {
            ...(this.o.headers as Record<string, string> | undefined),
            'content-type': contentType,
            accept,
            // Node frames a DELETE's body by neither length nor chunks unless told (see ApiClient).
            ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const bytes = Buffer.concat(chunks);
            resolve({ status: res.statusCode ?? 0, text: bytes.toString('utf8'), bytes });
          });
        },
      );
      req.on('error', (e: NodeJS.ErrnoException) => {
        reject(req.reusedSocket && e.code === 'ECONNRESET' ? new StaleSocket(e) : e);
      });
      req.end(body);
    });
  }

  /** The answer's body; a read the API server cannot serve yet is asked again, as `listPage` does. */
  async ok(method: string, path: string, body?: string, accept?: string): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const r = await this.send(method, path, body, accept);
      if (r.status < 300) return r.text;
      if (method !== 'GET' || attempt >= LIST_ATTEMPTS || !transientListError(r.status, r.text))
        throw new Error(`${method} ${path}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
      await sleep(fullJitter(attempt, LIST_BACKOFF));
    }
  }
}

/** Runs `fn` over `items` with at most `n` in flight. */
export async function inParallel<T>(
  items: readonly T[],
  n: number,
  fn: (x: T, i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) await fn(items[i] as T, i);
    }),
  );
}

export interface Node {
  name: string;
  uid: string;
}

export async function kwokNodes(raw: Raw): Promise<Node[]> {
  const list = JSON.parse(await raw.ok('GET', '/api/v1/nodes?labelSelector=type%3Dkwok')) as {
    items: { metadata: { name: string; uid: string; annotations?: Record<string, string> } }[];
  };
  return list.items
    .filter((n) => n.metadata.annotations?.[KWOK_ANNOTATION] !== undefined)
    .map((n) => ({ name: n.metadata.name, uid: n.metadata.uid }));
}

export const SLICES_PATH = '/apis/resource.k8s.io/v1/resourceslices';

export const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/**
 * Every page of a collection, `each` given each page's items as it comes; answers the list's
 * resourceVersion. `query` without the leading `?`.
 */
export async function eachPage(
  raw: Raw,
  path: string,
  query: string,
  accept: string | undefined,
  each: (items: unknown[]) => void,
): Promise<string> {
  let cont = '';
  let rv: string;
  do {
    const page = JSON.parse(
      await raw.ok(
        'GET',
        `${path}?limit=500${query ? `&${query}` : ''}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
        undefined,
        accept,
      ),
      // An empty PartialObjectMetadataList has `items: null`.
    ) as { items: unknown[] | null; metadata?: { continue?: string; resourceVersion?: string } };
    each(page.items ?? []);
    cont = page.metadata?.continue ?? '';
    rv = page.metadata?.resourceVersion ?? '';
  } while (cont);
  return rv;
}

/** Every object of a collection, in pages; `query` without the leading `?`. */
export async function listAll<T>(raw: Raw, path: string, query = '', accept?: string): Promise<T[]> {
  const items: T[] = [];
  await eachPage(raw, path, query, accept, (page) => items.push(...(page as T[])));
  return items;
}

/** Name and uid of every object of a collection, read as metadata only. */
export async function metadataOf(raw: Raw, path: string, query = ''): Promise<Node[]> {
  const out: Node[] = [];
  await eachPage(raw, path, query, METADATA_LIST, (items) => {
    const page = items as { metadata: Node }[];
    out.push(...page.map((x) => ({ name: x.metadata.name, uid: x.metadata.uid })));
  });
  return out;
}

export async function names(raw: Raw, path: string, query = ''): Promise<string[]> {
  return (await metadataOf(raw, path, query)).map((x) => x.name);
}

/** Every slice's name; with `nodes`, only of slices a Node among them owns (on a cluster not the bench's own). */
export async function sliceNames(raw: Raw, nodes?: readonly Node[]): Promise<string[]> {
  if (!nodes) return names(raw, SLICES_PATH);
  const of = new Set(nodes.map((n) => n.uid));
  const out: string[] = [];
  await eachPage(raw, SLICES_PATH, '', METADATA_LIST, (items) => {
    for (const { metadata: m } of items as {
      metadata: { name: string; ownerReferences?: { kind: string; uid: string }[] };
    }[])
      if (m.ownerReferences?.some((r) => r.kind === 'Node' && of.has(r.uid))) out.push(m.name);
  });
  return out;
}

export async function get(url: string): Promise<{ status: number; text: string }> {
  try {
    const r = await fetch(url);
    return { status: r.status, text: await r.text() };
  } catch {
    return { status: 0, text: '' };
  }
}

export function metric(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return Number(m?.[1] ?? Number.NaN);
}

/**
 * The garbage collections of a process that held its event loop past `overS`, by kind (`major`, `minor`,
 * `incremental`, `weakcb`), from prom-client's `nodejs_gc_duration_seconds` histogram in a scrape; `overS`
 * must be one of its bucket bounds (0.001, 0.01, 0.1, 1, 2, 5).
 */
export function longGcs(text: string, prefix: string, overS = 0.1): Record<string, number> {
  const counts = new Map<string, { over: number; all: number }>();
  const re = new RegExp(`^${prefix}nodejs_gc_duration_seconds_bucket\\{([^}]*)\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(re)) {
    const labels = new Map<string, string>();
    for (const l of (m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels.set(l[1] ?? '', l[2] ?? '');
    const kind = labels.get('kind') ?? '';
    const c = counts.get(kind) ?? { over: 0, all: 0 };
    if (labels.get('le') === '+Inf') c.all = Number(m[2]);
    else if (Number(labels.get('le')) === overS) c.over = Number(m[2]);
    counts.set(kind, c);
  }
  return Object.fromEntries([...counts].map(([k, c]) => [k, c.all - c.over]));
}

/** A `fakegpu fleet` process as users start it, on this cluster. */
export function startFleet(
  kubeconfig: string,
  extra: string[],
  o: { dynamicMig: boolean; log: (l: string) => void; logFile?: string },
): ChildProcess {
  // The fleet's own log (stderr) explains a slow round: when it was listing, writing, retrying.
  const out = o.logFile === undefined ? 'pipe' : openSync(o.logFile, 'w');
  const p = spawn(
    process.execPath,
    [
      ...FLEET_NODE_FLAGS,
      join(REPO_ROOT, 'bin', 'fakegpu.js'),
      'fleet',
      `--kubeconfig=${kubeconfig}`,
      `--http-endpoint=${FLEET_HTTP}`,
      // Served in every round and by the idle fleet too, so the memory compared is like for like.
      `--dcgm-endpoint=${FLEET_DCGM}`,
      ...(o.dynamicMig ? ['--dynamic-mig'] : []),
      ...extra,
    ],
    { stdio: ['ignore', 'ignore', out], env: { ...process.env, ...FLEET_MALLOC_ENV } },
  );
  if (typeof out === 'number') closeSync(out);
  let tail = '';
  p.stderr?.on('data', (c: Buffer) => {
    tail = (tail + c.toString('utf8')).slice(-4000);
  });
  p.on('exit', (code) => {
    if (code !== 0 && code !== null)
      o.log(`fleet exited ${code}:\n${o.logFile ? `its log: ${o.logFile}` : tail}`);
  });
  return p;
}

/**
 * Polls `check` every `everyMs` until it holds. A check that scrapes a fleet under measurement costs that
 * fleet CPU each time: those poll at half a second, which is also the resolution of what they time.
 */
export async function until(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  everyMs = 50,
): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > timeoutMs) throw new FakegpuError('bench', `timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** How often a bench scrapes a fleet it is measuring (see `until`). */
export const SCRAPE_EVERY_MS = 500;

export async function stopFleet(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null) return;
  const gone = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await gone;
}

/** `--fill`'s value: a share from 0 to 1, or a FakegpuError naming it. */
export function fillFlag(value: string): number {
  const fill = Number(value);
  if (value.trim() === '' || !(fill >= 0 && fill <= 1))
    throw new FakegpuError('--fill', `${show(value)} is not a number from 0 to 1`);
  return fill;
}

/** A bad flag stops the run before any cluster starts, with one line naming it. */
export function checked<T>(bench: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (!(e instanceof FakegpuError)) throw e;
    process.stderr.write(`${bench}: ${e.message}\n`);
    process.exit(2);
  }
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

/**
 * A bench's own cluster of `kwokNodes` KWOK nodes of `kwokProfile` (no fleet: the bench starts its own),
 * `run` against its kubeconfig, then the cluster purged unless `keep`.
 */
export async function onKwokCluster<T>(
  o: {
    dir: string;
    kwokNodes: number;
    /** KWOK controllers the nodes are split between; absent: one. */
    kwokControllers?: number;
    kwokProfile: string;
    keep: boolean;
    log: (line: string) => void;
  },
  run: (kubeconfig: string) => Promise<T>,
): Promise<T> {
  const e = await clusterUp({
    dir: o.dir,
    nodeName: 'fakegpu-bench-host',
    kwokNodes: o.kwokNodes,
    ...(o.kwokControllers === undefined ? {} : { kwokControllers: o.kwokControllers }),
    kwokProfile: o.kwokProfile,
    kwokFleet: false,
    log: o.log,
  });
  try {
    return await run(e.KUBECONFIG);
  } finally {
    if (!o.keep) await clusterDown({ dir: o.dir, purge: true, log: o.log });
  }
}

/** The machine a figure was measured on, as the README states it. */
export function hardware(): string {
  const cpu = cpus();
  return `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB`;
}

/** Where a run's JSON result goes: `--json <file>`, else `<cache>/bench-results/<bench>-<start time>.json`. */
export function resultPath(bench: string, started: Date, json: string | undefined): string {
  return resolve(
    json ??
      join(cacheRoot(), 'bench-results', `${bench}-${started.toISOString().replace(/[:.]/g, '-')}.json`),
  );
}

export function writeResult(path: string, result: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
}

/**
 * Progress of a long phase (`src/process/progress.ts`): done of total, rate, elapsed and a linear ETA,
 * `done` asked every `everyMs`. Returns the stop; `done` may read a remote counter (a fleet's metrics),
 * whose failure skips one look.
 */
export function progress(
  what: string,
  total: number,
  done: () => number | Promise<number>,
  log: Log,
  everyMs = 15_000,
): () => void {
  // On a terminal a live line, asked for each second; in a log a line per tenth of the way.
  const p = new Progress({ what, total, log });
  const timer = setInterval(
    () => {
      void (async () => {
        p.update(await done());
      })().catch(() => undefined);
    },
    log.tty ? 1000 : everyMs,
  );
  timer.unref();
  return () => {
    clearInterval(timer);
  };
}

/** A process's `/proc/<pid>/status` in kB by key (VmRSS, VmHWM, RssAnon, …); 0 for a key it lacks. */
export function procStatusKb(pid: number): (key: string) => number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? 0);
}

const CONTROL_PLANE = ['etcd', 'kube-apiserver', 'kube-controller', 'kube-scheduler', 'kwok'] as const;

/**
 * The control plane's resident memory now and at its peak (MiB, by /proc: `comm` is cut to 15
 * characters), so a run that outgrows the machine says which component did.
 */
export function controlPlaneMemory(): Record<string, { rssMiB: number; peakMiB: number }> {
  const out: Record<string, { rssMiB: number; peakMiB: number }> = {};
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      if (!(CONTROL_PLANE as readonly string[]).includes(comm)) continue;
      const kb = procStatusKb(Number(pid));
      out[comm] = { rssMiB: Math.round(kb('VmRSS') / 1024), peakMiB: Math.round(kb('VmHWM') / 1024) };
    } catch {
      // A process that ended while being read.
    }
  }
  return out;
}

export function showControlPlaneMemory(m: Record<string, { rssMiB: number; peakMiB: number }>): string {
  return Object.entries(m)
    .map(([k, v]) => `${k} ${v.rssMiB} (peak ${v.peakMiB})`)
    .join(', ');
}

/**
 * Deletes every slice, one request per slice, many in flight: a collection delete answers with every
 * deleted object at once (gigabytes for dynamic MIG at N=1000) and outlasts the request timeout.
 */
export async function deleteAllSlices(
  raw: Raw,
  inFlight: number,
  log: (line: string) => void,
  nodes?: readonly Node[],
): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const names = await sliceNames(raw, nodes);
    if (names.length === 0) return;
    await inParallel(names, inFlight, async (name) => {
      const r = await raw.send('DELETE', `${SLICES_PATH}/${name}`).catch(() => ({ status: 0, text: '' }));
      if (r.status >= 300 && r.status !== 404) log(`deleting ${name}: HTTP ${r.status}; again later`);
    });
  }
  throw new FakegpuError('bench', 'could not delete the slices');
}

/**
 * The ceiling: the very slices the fleet would write, posted by a minimal client with `inFlight` requests
 * in flight (a node's slices one after another, `inFlight` nodes at once), as fast as this API server
 * takes them.
 */
export async function postCeiling(
  raw: Raw,
  nodes: readonly Node[],
  bodies: (n: Node) => string[],
  o: { inFlight: number; total: number; what: string; log: (line: string) => void },
): Promise<void> {
  let retried = 0;
  let posted = 0;
  const postProgress = progress(o.what, o.total, () => posted, o.log);
  const post = async (text: string): Promise<void> => {
    // An API server saturated by 30 kB writes answers 504 (its request deadline) or 429; a client
    // asks again, as the fleet does. A 504 may hide a create that landed: the next delete takes it.
    for (let attempt = 1; ; attempt++) {
      const r = await raw.send('POST', SLICES_PATH, text);
      if (r.status < 300) {
        posted++;
        return;
      }
      if (attempt >= 8 || ![429, 503, 504].includes(r.status))
        throw new FakegpuError('bench', `ceiling: POST a slice: HTTP ${r.status}: ${r.text.slice(0, 200)}`);
      retried++;
      await sleep(fullJitter(attempt, PUBLISH_BACKOFF));
    }
  };
  await inParallel(nodes, o.inFlight, async (n) => {
    for (const text of bodies(n)) await post(text);
  });
  postProgress();
  if (retried > 0) o.log(`${o.what}: ${retried} posts asked again (429/503/504)`);
}
