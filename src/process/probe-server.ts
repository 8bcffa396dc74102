import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { pino, type Logger } from 'pino';
import type { Registry } from 'prom-client';
import { clip, FakegpuError } from '../errors.js';
import { splitEndpoint } from './endpoint.js';
import { ScrapeStream, type ScrapeLimits } from './scrape-stream.js';

/**
 * The HTTP endpoint every long-running process serves (plugin, fleet, ComputeDomain controller), so that
 * all of them answer probes and scrapes the same way:
 *
 * - `/healthz` (liveness): 200 `ok` once the process has started, 503 `starting` before;
 * - `/readyz` (readiness): 200 `ok` when `ready()` holds, else 503 with `notReady`;
 * - `/metrics`: the registry's Prometheus exposition (404 without one), through `ScrapeStream` as every
 *   scrape is: few at once, slow clients cut, a registry that fails a 500;
 * - a path of `routes` (GET only): its handler (the fleet's page);
 * - anything else: 404.
 */
export interface ProbeServerOptions {
  /** `host:port`; port 0 lets the system choose. */
  endpoint: string;
  /** The flag the endpoint came from, which a listen error names. */
  flag?: string;
  /** Readiness, asked on every /readyz once started; default: ready. */
  ready?: () => boolean;
  /** /readyz's body while not ready, e.g. "not registered with the kubelet", or how far it has come. */
  notReady?: string | (() => string);
  metrics?: Registry;
  /** Where a failed scrape or a server error is logged; default: nowhere. */
  log?: Logger;
  limits?: Partial<ScrapeLimits>;
  /** More paths, each answered by its handler. */
  routes?: Readonly<Record<string, (req: IncomingMessage, res: ServerResponse) => void>>;
}

export interface ProbeServer {
  /** The port it listens on (the endpoint's, or the one the system chose for port 0). */
  port: number;
  /** The process has started: from now on /healthz answers 200 and /readyz asks `ready`. */
  started(): void;
  /** Scrapes of `/metrics` being answered now. */
  scrapesInFlight(): number;
  close(): Promise<void>;
}

const TEXT = { 'content-type': 'text/plain' };

/** Why a socket could not listen, in words; the code's own message otherwise. */
function listenReason(e: unknown): string {
  const code = e instanceof Error && 'code' in e ? e.code : undefined;
  if (code === 'EADDRINUSE') return 'the address is already in use (another process listens there)';
  if (code === 'EACCES') return 'permission denied (a port below 1024 needs privileges)';
  if (code === 'EADDRNOTAVAIL') return 'no interface of this machine has that address';
  return clip(e instanceof Error ? e.message : String(e));
}

/**
 * Listens on `endpoint`; a failure is one line naming the flag and the endpoint, not a stack trace. A
 * server error after that (an accept failing: too many open files) is logged, not thrown: an `error`
 * event nobody listens to would end the process.
 */
export async function listenOn(
  server: Server,
  endpoint: string,
  flag: string,
  log?: Logger,
): Promise<number> {
  const [host, port] = splitEndpoint(endpoint);
  await new Promise<void>((resolve, reject) => {
    const failed = (e: unknown): void => {
      reject(new FakegpuError(flag, `cannot listen on ${JSON.stringify(endpoint)}: ${listenReason(e)}`));
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      server.on('error', (e) => {
        log?.error({ err: e.message, endpoint }, 'HTTP server error');
      });
      resolve();
    });
  });
  const address = server.address();
  return typeof address === 'object' && address ? address.port : port;
}

const LOOPBACK_NAME = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * For a server listening on loopback: false (and 421 answered) for a request whose Host is another
 * name. A page on the internet can make a browser on this machine ask `evil.example:8080` that resolves
 * to 127.0.0.1 (DNS rebinding); its Host header still says evil.example, so refusing it keeps `/ui/state`
 * and `/metrics` to what runs here. A server on any other address answers every Host (its probes come
 * by pod IP).
 */
export function hostGuard(endpoint: string): (req: IncomingMessage, res: ServerResponse) => boolean {
  const [host] = splitEndpoint(endpoint);
  if (!LOOPBACK_NAME.test(host.includes(':') ? `[${host}]` : host)) return () => true;
  return (req, res) => {
    const name = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (LOOPBACK_NAME.test(name)) return true;
    res.writeHead(421, TEXT).end('this server answers only for localhost\n');
    return false;
  };
}

/** Closes the server, cutting keep-alive connections (a scraper's) rather than waiting on them. */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
    server.closeAllConnections();
  });
}

export async function serveProbes(o: ProbeServerOptions): Promise<ProbeServer> {
  let started = false;
  const ready = o.ready ?? (() => true);
  const notReady = (): string =>
    typeof o.notReady === 'function' ? o.notReady() : (o.notReady ?? 'not ready');
  const stream = new ScrapeStream(o.log ?? pino({ level: 'silent' }), 'metrics', o.limits);
  const allowed = hostGuard(o.endpoint);
  const server = createServer((req, res) => {
    if (!allowed(req, res)) return;
    const path = (req.url ?? '').split('?')[0];
    if (path === '/healthz') {
      res.writeHead(started ? 200 : 503, TEXT).end(started ? 'ok\n' : 'starting\n');
    } else if (path === '/readyz') {
      const ok = started && ready();
      res.writeHead(ok ? 200 : 503, TEXT).end(ok ? 'ok\n' : `${started ? notReady() : 'starting'}\n`);
    } else if (path === '/metrics' && o.metrics) {
      const reg = o.metrics;
      stream.serve(res, reg.contentType, async () => [await reg.metrics()]);
    } else if (path !== undefined && o.routes && Object.hasOwn(o.routes, path) && req.method === 'GET') {
      try {
        o.routes[path]?.(req, res);
      } catch (e) {
        // A page's failure is the page's: logged and answered 500, never the process's end.
        o.log?.error({ path, err: e instanceof Error ? e.message : String(e) }, 'page failed');
        if (!res.headersSent) res.writeHead(500, TEXT).end('internal error\n');
      }
    } else {
      res.writeHead(404).end();
    }
  });
  const port = await listenOn(server, o.endpoint, o.flag ?? '--http-endpoint', o.log);
  return {
    port,
    started() {
      started = true;
    },
    scrapesInFlight: () => stream.inFlight,
    close: () => closeServer(server),
  };
}
