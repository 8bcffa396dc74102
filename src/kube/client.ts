import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { createSecureContext, type SecureContext } from 'node:tls';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';
import type { Semver } from './types/version.js';

/** `fakegpu` is the field manager of every write; the pid names the process that sent it. */
export const USER_AGENT = `fakegpu/pid-${String(process.pid)}`;

/**
 * The one HTTP client of the API server: every request of the fleet and the publisher, and every watch,
 * goes through an `ApiClient`. Each request has a deadline and each watch a silence limit, because an
 * API server that accepts connections and never answers (overloaded, half-restarted, behind a dead
 * load balancer) would otherwise hold every caller forever; a request past its deadline fails like any
 * other error, and the caller retries it with backoff.
 */

/** Default deadline of one request (not a watch); `--request-timeout` of the fleet. */
export const REQUEST_TIMEOUT_MS = 30_000;
/**
 * A watch asks the server to end it after this long (it resumes from its last resourceVersion at once),
 * so that even a connection dropped without a word by a middlebox is replaced in bounded time.
 */
export const WATCH_TIMEOUT_S = 600;
/**
 * A watch with nothing on it for this long is taken for dead. Above the API server's bookmark
 * interval (one minute), which a watch asking for bookmarks gets even when nothing changes.
 */
export const WATCH_IDLE_MS = 150_000;

export interface ApiClientOptions {
  /** Connections to the API server at most (requests beyond wait for one); watches have their own. */
  maxSockets?: number;
  /** Deadline of a request, in milliseconds. */
  timeoutMs?: number;
  /** Silence after which a watch is given up, in milliseconds. */
  watchIdleMs?: number;
}

/** What a write answers: the stored object's name and resourceVersion. */
export interface WrittenRef {
  name: string;
  resourceVersion: string;
}

/** A watch as it streams: each event, then `done` once (null: the server ended it cleanly). */
export interface WatchStreamHandlers {
  event(type: string, obj: unknown): void;
  done(err: unknown): void;
}

/** Opens one watch; answers a function that ends it without calling `done`. */
export interface WatchSource {
  watch(path: string, query: Record<string, string>, accept: string, h: WatchStreamHandlers): () => void;
}

/**
 * Requests over one keep-alive connection pool and one TLS context: client-node builds a new agent for
 * every request, so each one pays a TCP connect, a TLS handshake and a fresh TLS context, which for a
 * process writing thousands of slices is most of its CPU. Credentials sent as headers (tokens, exec
 * plugins) are still applied per request; a proxied cluster keeps client-node's own agents.
 */
/** A request no longer wanted: destroyed, with a listener for the error that destroying it raises. */
function discard(r: ClientRequest): void {
  r.on('error', () => undefined);
  r.destroy();
}

export class ApiClient implements WatchSource {
  private context: Promise<SecureContext> | null = null;
  private pool: Promise<Agent> | null = null;
  /** Watches hold their connection for minutes: on the pool they would starve the writers. */
  private watchPool: Promise<Agent> | null = null;
  readonly timeoutMs: number;
  readonly watchIdleMs: number;

  constructor(
    private readonly kc: KubeConfig,
    private readonly o: ApiClientOptions = {},
  ) {
    this.timeoutMs = o.timeoutMs ?? REQUEST_TIMEOUT_MS;
    this.watchIdleMs = o.watchIdleMs ?? WATCH_IDLE_MS;
  }

  /**
   * Sends JSON the caller already holds as text and answers the response's text: for writes that are
   * made of pre-serialized pieces, where client-node would parse, copy and serialize each object again.
   * Throws an `ApiError` carrying the HTTP status for any answer but 2xx, and code 0 for no answer.
   * `contentType` is the body's: a PATCH says which kind of patch it is.
   */
  async send(
    method: string,
    path: string,
    body?: string,
    accept = 'application/json',
    contentType = 'application/json',
    timeoutMs = this.timeoutMs,
  ): Promise<string> {
    return (await this.request(method, path, body, accept, contentType, timeoutMs)).toString('utf8');
  }

  /**
   * A write whose answer is wanted only for the object's name and resourceVersion: the answer stays
   * bytes (outside V8's heap) but for its head, which holds both (see `writtenRef`).
   */
  async write(
    method: string,
    path: string,
    body: string,
    accept = 'application/json',
    timeoutMs = this.timeoutMs,
  ): Promise<WrittenRef> {
    const answer = await this.request(method, path, body, accept, 'application/json', timeoutMs);
    return writtenRef(answer.toString('utf8', 0, 2048), () => answer.toString('utf8'));
  }

  /**
   * The agent API clients of client-node may share (`PooledKubeConfig`). Kept as a promise, so the first
   * requests, arriving together, share one agent instead of each making its own.
   */
  agent(): Promise<Agent> {
    return (this.pool ??= this.agentOptions().then(
      (o) => new Agent({ keepAlive: true, maxSockets: this.o.maxSockets ?? Infinity, ...o }),
    ));
  }

  watch(path: string, query: Record<string, string>, accept: string, h: WatchStreamHandlers): () => void {
    let req: ClientRequest | null = null;
    let over = false;
    let idle: NodeJS.Timeout | undefined;
    const finish = (err: unknown): void => {
      if (over) return;
      over = true;
      clearTimeout(idle);
      req?.destroy();
      h.done(err);
    };
    const arm = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        finish(new ApiError(0, `watch ${path}: nothing received for ${this.watchIdleMs} ms`));
      }, this.watchIdleMs);
    };
    arm();
    const q = new URLSearchParams({ ...query, watch: 'true', timeoutSeconds: String(WATCH_TIMEOUT_S) });
    this.open('GET', `${path}?${q.toString()}`, accept, null, true).then(
      (r) => {
        if (over) {
          discard(r);
          return;
        }
        req = r;
        r.on('error', finish);
        r.on('response', (res) => {
          arm();
          if (res.statusCode !== 200) {
            failure(res, 'GET', path, finish);
            return;
          }
          let rest = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            arm();
            rest += chunk;
            for (let nl = rest.indexOf('\n'); nl >= 0 && !over; nl = rest.indexOf('\n')) {
              const line = rest.slice(0, nl);
              rest = rest.slice(nl + 1);
              if (!line.trim()) continue;
              try {
                const e = JSON.parse(line) as { type: string; object: unknown };
                h.event(e.type, e.object);
              } catch (err) {
                finish(err);
              }
            }
          });
          res.on('error', finish);
          res.on('end', () => {
            finish(null);
          });
          res.on('close', () => {
            finish(res.complete ? null : new ApiError(0, `watch ${path}: connection lost`));
          });
        });
        r.end();
      },
      (e: unknown) => {
        finish(e);
      },
    );
    return () => {
      if (over) return;
      over = true;
      clearTimeout(idle);
      req?.destroy();
    };
  }

  private request(
    method: string,
    path: string,
    body: string | undefined,
    accept: string,
    contentType: string,
    timeoutMs: number,
  ): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      let late = false;
      let req: ClientRequest | null = null;
      // The deadline covers the credentials step too: an exec plugin that hangs is no answer either.
      const timer = setTimeout(() => {
        late = true;
        if (req) req.destroy();
        else fail(null);
      }, timeoutMs);
      const fail = (e: unknown): void => {
        clearTimeout(timer);
        reject(
          late
            ? new ApiError(0, `${method} ${path}: no answer within ${timeoutMs} ms`)
            : e instanceof Error
              ? e
              : new Error(String(e)),
        );
      };
      this.open(method, path, accept, body === undefined ? null : contentType, false).then((r) => {
        if (late) {
          discard(r);
          return;
        }
        req = r;
        r.on('error', fail);
        r.on('response', (res) => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) {
            failure(res, method, path, fail);
            return;
          }
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', fail);
          res.on('close', () => {
            if (!res.complete) fail(new ApiError(0, `${method} ${path}: connection lost`));
          });
          res.on('end', () => {
            clearTimeout(timer);
            resolve(Buffer.concat(chunks));
          });
        });
        // Node frames a body by Content-Length or chunks, but for a DELETE (and GET) by neither unless
        // told: the API server then reads a DELETE without its DeleteOptions (preconditions lost) and
        // takes the body for the start of the next request on that connection (400 Bad Request).
        if (body !== undefined) r.setHeader('content-length', Buffer.byteLength(body));
        r.end(body);
      }, fail);
    });
  }

  private async open(
    method: string,
    path: string,
    accept: string,
    /** The body's media type; null: no body. */
    contentType: string | null,
    watch: boolean,
  ): Promise<ClientRequest> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new ApiError(0, 'the kubeconfig names no current cluster');
    const o: RequestOptions = {};
    // Credentials per request, as client-node applies them: tokens from files and exec plugins rotate.
    await this.kc.applyToHTTPSOptions(o);
    const url = new URL(cluster.server);
    const https = url.protocol === 'https:';
    const agent = cluster.proxyUrl
      ? o.agent
      : https
        ? watch
          ? await (this.watchPool ??= this.agentOptions().then((x) => new Agent({ keepAlive: true, ...x })))
          : await this.agent()
        : undefined;
    const prefix = url.pathname.replace(/\/$/, '');
    return (https ? httpsRequest : httpRequest)({
      // URL keeps an IPv6 address in brackets; the socket wants it bare.
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port,
      method,
      path: prefix + path,
      headers: {
        ...(o.headers as Record<string, string> | undefined),
        accept,
        // The API server names the field manager of what we write after the part before the '/'; the
        // rest tells processes apart in its audit log (fleet replicas, each node's plugin).
        'user-agent': USER_AGENT,
        ...(contentType === null ? {} : { 'content-type': contentType }),
      },
      ...(agent ? { agent } : {}),
      ...(o.auth ? { auth: o.auth } : {}),
    });
  }

  private async agentOptions(): Promise<{
    secureContext: SecureContext;
    rejectUnauthorized?: boolean;
    servername?: string;
  }> {
    const cluster = this.kc.getCurrentCluster();
    return {
      secureContext: await (this.context ??= this.makeContext()),
      ...(cluster?.skipTLSVerify ? { rejectUnauthorized: false } : {}),
      ...(cluster?.tlsServerName ? { servername: cluster.tlsServerName } : {}),
    };
  }

  /**
   * One TLS context for every connection: given the certificates instead, each connection parses them
   * into a context of its own, about half a MiB resident apiece.
   */
  private async makeContext(): Promise<SecureContext> {
    const o: RequestOptions = {};
    await this.kc.applyToHTTPSOptions(o);
    return createSecureContext({ ca: o.ca, cert: o.cert, key: o.key, pfx: o.pfx, passphrase: o.passphrase });
  }
}

/** Rejects with the status and the head of the body of an answer that is not a success. */
function failure(res: IncomingMessage, method: string, path: string, reject: (e: unknown) => void): void {
  const chunks: Buffer[] = [];
  const status = res.statusCode ?? 0;
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('error', reject);
  res.on('end', () => {
    reject(
      new ApiError(
        status,
        `${method} ${path}: HTTP ${status}: ${Buffer.concat(chunks).toString('utf8', 0, 500)}`,
      ),
    );
  });
}

/**
 * A KubeConfig with one `ApiClient` (`http`), whose connection pool client-node's API clients made from
 * it share too.
 */
export class PooledKubeConfig extends KubeConfig {
  readonly http: ApiClient;

  constructor(maxSockets: number, o: Omit<ApiClientOptions, 'maxSockets'> = {}) {
    super();
    this.http = new ApiClient(this, { ...o, maxSockets });
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const cluster = this.getCurrentCluster();
    if (!cluster?.server.startsWith('https:') || cluster.proxyUrl) return;
    context.setAgent(await this.http.agent());
  }
}

/** `kc` loaded from `path`, or from where kubectl looks without one ($KUBECONFIG, ~/.kube/config, in-cluster). */
export function loadKubeconfigInto<T extends KubeConfig>(kc: T, path: string | undefined): T {
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

const clients = new WeakMap<KubeConfig, ApiClient>();

/** The `ApiClient` of a kubeconfig: its own for a `PooledKubeConfig`, else one made once and kept. */
export function clientOf(kc: KubeConfig): ApiClient {
  if (kc instanceof PooledKubeConfig) return kc.http;
  let c = clients.get(kc);
  if (!c) clients.set(kc, (c = new ApiClient(kc)));
  return c;
}

/** A non-2xx answer of the API server, or none at all (`code` 0); `code` as client-node's ApiException has it. */
/**
 * An answer to a read that means "not now" rather than "no": 504 "Too large resource version" (the
 * API server's watch cache lags behind the resourceVersion a list or its continue token asks for, as
 * after a burst of writes), 429 (priority and fairness), 503. Asking again shortly succeeds.
 */
export function transientListError(status: number, text: string): boolean {
  return status === 429 || status === 503 || (status === 504 && /Too large resource version/i.test(text));
}

export class ApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * The name and resourceVersion of the object the API server answered a write with. They are read from
 * the head of the text, where the server's encoder puts them (ObjectMeta in Go field order: name, …,
 * uid, resourceVersion), because parsing all of it (the spec and its managedFields) would cost a writer
 * of thousands of large objects more than building them did; any other shape is parsed whole.
 */
export function writtenRef(head: string, whole: () => string = () => head): WrittenRef {
  const m = HEAD.exec(head.slice(0, 2048));
  if (m?.[1] && m[2]) return { name: own(m[1]), resourceVersion: own(m[2]) };
  const o = JSON.parse(whole()) as { metadata?: { name?: string; resourceVersion?: string } };
  return { name: o.metadata?.name ?? '', resourceVersion: o.metadata?.resourceVersion ?? '' };
}

const HEAD =
  /^\{"kind":"[A-Za-z]+","apiVersion":"[^"]+","metadata":\{"name":"([a-z0-9.-]+)",(?:"[a-zA-Z]+":(?:"[^"\\]*"|\d+),)*?"resourceVersion":"(\d+)"/;

/**
 * A copy of `s` that does not hold on to the text it was cut from: V8 keeps a substring as a view of
 * its parent, so a name kept from each answer would keep each whole answer alive.
 */
function own(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}

/** The API server's version decides the slice layout under dynamic MIG, as in the real driver. */
export async function serverVersion(kc: KubeConfig | ApiClient): Promise<Semver> {
  const client = kc instanceof ApiClient ? kc : clientOf(kc);
  const v = JSON.parse(await client.send('GET', '/version')) as { gitVersion?: string };
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v.gitVersion ?? '');
  return m
    ? { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) }
    : { major: 1, minor: 37, patch: 0 };
}
