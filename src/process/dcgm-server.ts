import { createServer } from 'node:http';
import type { Logger } from 'pino';
import { closeServer, hostGuard, listenOn } from './probe-server.js';
import { ScrapeStream, type ScrapeLimits } from './scrape-stream.js';

/** The content type of Prometheus' text format, as dcgm-exporter answers a scrape. */
export const TEXT_FORMAT = 'text/plain; version=0.0.4; charset=utf-8';

export interface DcgmServer {
  /** The port it listens on (the endpoint's, or the one the system chose for port 0). */
  port: number;
  /** Scrapes being answered now. */
  scrapesInFlight(): number;
  close(): Promise<void>;
}

export interface DcgmServeOptions {
  /** The flag the endpoint came from, which a listen error names. */
  flag?: string;
  limits?: Partial<ScrapeLimits>;
}

/**
 * dcgm-exporter's endpoint: `/metrics` (its default port is 9400) and `/health`, which its chart probes.
 * A scrape is streamed as `ScrapeStream` does (few at once, slow and gone clients cut); one that throws
 * answers 500 (or is cut short) with a log line, and the next one tries again.
 */
export async function serveDcgm(
  endpoint: string,
  scrape: () => Iterable<string>,
  log: Logger,
  o: DcgmServeOptions = {},
): Promise<DcgmServer> {
  const stream = new ScrapeStream(log, 'dcgm', o.limits);
  const allowed = hostGuard(endpoint);
  const server = createServer((req, res) => {
    if (!allowed(req, res)) return;
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics') stream.serve(res, TEXT_FORMAT, scrape);
    else if (path === '/health') res.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
    else res.writeHead(404).end();
  });
  const port = await listenOn(server, endpoint, o.flag ?? '--dcgm-endpoint', log);
  return { port, scrapesInFlight: () => stream.inFlight, close: () => closeServer(server) };
}
