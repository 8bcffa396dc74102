import { createServer } from 'node:http';
import type { Logger } from 'pino';
import { splitEndpoint } from '../net/endpoint.js';

/** The content type of Prometheus' text format, as dcgm-exporter answers a scrape. */
export const TEXT_FORMAT = 'text/plain; version=0.0.4; charset=utf-8';

export interface DcgmServer {
  close(): Promise<void>;
}

/**
 * dcgm-exporter's endpoint: `/metrics` (its default port is 9400) and `/health`, which its chart probes.
 * A scrape that throws answers 500 with a log line; the next one tries again.
 */
export async function serveDcgm(endpoint: string, scrape: () => string, log: Logger): Promise<DcgmServer> {
  const [host, port] = splitEndpoint(endpoint);
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics') {
      try {
        const body = scrape();
        res.writeHead(200, { 'content-type': TEXT_FORMAT }).end(body);
      } catch (e) {
        log.error({ err: e instanceof Error ? e.message : String(e) }, 'dcgm scrape failed');
        res.writeHead(500).end();
      }
    } else if (path === '/health') res.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
