import { createServer, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { closeServer, listenOn } from './probe-server.js';

/** The content type of Prometheus' text format, as dcgm-exporter answers a scrape. */
export const TEXT_FORMAT = 'text/plain; version=0.0.4; charset=utf-8';

export interface DcgmServer {
  /** The port it listens on (the endpoint's, or the one the system chose for port 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * Sends the exposition piece by piece, yielding to the event loop between pieces (and waiting while the
 * client reads slowly), so that a scrape of thousands of GPUs does not hold up the fleet's publishing.
 */
async function send(res: ServerResponse, pieces: Iterator<string>): Promise<void> {
  res.writeHead(200, { 'content-type': TEXT_FORMAT });
  for (let p = pieces.next(); !p.done; p = pieces.next()) {
    if (!res.write(p.value)) await new Promise((r) => res.once('drain', r));
    await new Promise((r) => setImmediate(r));
    if (res.destroyed) return;
  }
  res.end();
}

/**
 * dcgm-exporter's endpoint: `/metrics` (its default port is 9400) and `/health`, which its chart probes.
 * A scrape that throws answers 500 (or is cut short) with a log line; the next one tries again.
 */
export async function serveDcgm(
  endpoint: string,
  scrape: () => Iterable<string>,
  log: Logger,
  flag = '--dcgm-endpoint',
): Promise<DcgmServer> {
  const failed = (e: unknown): void => {
    log.error({ err: e instanceof Error ? e.message : String(e) }, 'dcgm scrape failed');
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics') {
      let pieces: Iterator<string>;
      try {
        pieces = scrape()[Symbol.iterator]();
      } catch (e) {
        failed(e);
        res.writeHead(500).end();
        return;
      }
      send(res, pieces).catch((e: unknown) => {
        failed(e);
        res.destroy();
      });
    } else if (path === '/health') res.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
    else res.writeHead(404).end();
  });
  const port = await listenOn(server, endpoint, flag);
  return { port, close: () => closeServer(server) };
}
