import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, normalize } from 'node:path';
import { releaseFiles } from '../../src/local-cluster/artifacts.js';
import type { Component } from '../../src/local-cluster/build.js';

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/**
 * Lays out `c`'s official release files in `root` as `FAKEGPU_MIRROR` expects them (each site's paths
 * under a folder named for its host), holding `content(name)` as each binary: archives packed as the
 * projects pack them, and the checksums in each project's form (a bare hash for dl.k8s.io and crictl,
 * `sha256sum` lines elsewhere, several files to one list for etcd and runc).
 */
export function writeRelease(root: string, c: Component, content: (binary: string) => Buffer): void {
  for (const f of releaseFiles(c) ?? []) {
    const u = new URL(f.url);
    const path = join(root, u.host, u.pathname);
    mkdirSync(dirname(path), { recursive: true });
    if (f.members === undefined) writeFileSync(path, content(f.binary ?? basename(path)));
    else {
      const stage = mkdtempSync(join(tmpdir(), 'fakegpu-mirror-'));
      try {
        for (const [member, name] of Object.entries(f.members)) {
          mkdirSync(dirname(join(stage, member)), { recursive: true });
          writeFileSync(join(stage, member), content(name), { mode: 0o755 });
        }
        // Owned by uid 1001, as a tarball built on a CI runner records its files.
        const r = spawnSync(
          'tar',
          [
            '--owner=1001',
            '--group=1001',
            '--numeric-owner',
            '-czf',
            path,
            '-C',
            stage,
            ...Object.keys(f.members),
          ],
          { encoding: 'utf8' },
        );
        if (r.status !== 0) throw new Error(`tar: ${r.stderr}`);
      } finally {
        rmSync(stage, { recursive: true, force: true });
      }
    }
    const s = new URL(f.sums);
    const sumsPath = join(root, s.host, s.pathname);
    const hash = sha256(readFileSync(path));
    const bare = f.sums === `${f.url}.sha256` && (u.host === 'dl.k8s.io' || u.pathname.includes('crictl'));
    if (bare) writeFileSync(sumsPath, hash);
    else appendFileSync(sumsPath, `${hash}  ${basename(path)}\n`);
  }
}

/**
 * The pins of `c`'s files as laid out in `root`, by official URL: what `npm run release-pins` would have
 * committed had the mirror's files been the official ones.
 */
export function pinsOf(root: string, ...cs: Component[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of cs)
    for (const f of releaseFiles(c) ?? []) {
      const u = new URL(f.url);
      out[f.url] = sha256(readFileSync(join(root, u.host, u.pathname)));
    }
  return out;
}

/** A static file server on loopback for `root`: the mirror a test points `FAKEGPU_MIRROR` at. */
export async function serveMirror(
  root: string,
): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const path = normalize(join(root, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
    if (!path.startsWith(root) || !existsSync(path) || !statSync(path).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-length': statSync(path).size });
    createReadStream(path).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
