import { get as httpGet } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakegpuError } from '../errors.js';
import { PORTS, type Layout } from './config.js';
import type { Toolchain } from './build.js';
import { kubectl } from './kubectl.js';
import { isAlive, tail, type Started } from './process.js';

/** Readiness: a health endpoint answering 200, and waiting for one while the process lives. */

export function httpOk(
  url: string,
  tls?: { ca: Buffer; cert: Buffer; key: Buffer } | 'insecure',
): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      resolve(ok);
    };
    const onRes = (res: { statusCode?: number; resume: () => void }): void => {
      res.resume();
      done(res.statusCode === 200);
    };
    const req = url.startsWith('https:')
      ? httpsRequest(url, tls === 'insecure' || !tls ? { rejectUnauthorized: false } : { ...tls }, onRes)
      : httpGet(url, onRes);
    req.setTimeout(2000, () => {
      req.destroy();
    });
    req.on('error', () => {
      done(false);
    });
    if (url.startsWith('https:')) req.end();
  });
}

/** kube-apiserver's /readyz, asked as the cluster's admin (it answers no one else); `at`: host:port. */
export function apiserverReady(l: Layout, at = `127.0.0.1:${PORTS.apiserver}`): () => Promise<boolean> {
  const tls = {
    ca: readFileSync(join(l.pki, 'ca.crt')),
    cert: readFileSync(join(l.pki, 'admin.crt')),
    key: readFileSync(join(l.pki, 'admin.key')),
  };
  return () => httpOk(`https://${at}/readyz`, tls);
}

/** Waits until `check` passes; fails at once, with the end of its log, if the process exits meanwhile. */
export async function waitFor(
  what: string,
  started: Started,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(started.pid)) {
      throw new FakegpuError(
        started.name,
        `exited while starting (${what}); last lines of ${started.log}:\n${tail(started.log)}`,
      );
    }
    if (await check()) return;
    await sleep(250);
  }
  throw new FakegpuError(
    started.name,
    `not ready after ${timeoutMs / 1000}s (${what}); last lines of ${started.log}:\n${tail(started.log)}`,
  );
}

/** Whether the node's plugin has published its ResourceSlices (any slice naming the node). */
export function pluginSlicesPublished(l: Layout, t: Toolchain, node: string): () => Promise<boolean> {
  return () => {
    const r = kubectl(l, t.bin, [
      'get',
      'resourceslices',
      `--field-selector=spec.nodeName=${node}`,
      '-o',
      'name',
    ]);
    return Promise.resolve(r.code === 0 && r.out.trim() !== '');
  };
}
