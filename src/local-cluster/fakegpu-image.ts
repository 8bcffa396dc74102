import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { DAEMON_SCRIPT } from '../node/imex-daemon/daemon-script.js';
import { FakegpuError } from '../errors.js';
import { cacheRoot } from './build.js';
import { busyboxRootfs, ensureBusybox, ociArchive } from './image.js';
import { REPO_ROOT } from '../process/repo.js';

/**
 * fakegpu's own image without Docker or a registry: the `Dockerfile`'s final stage, assembled from this
 * checkout (compiled `dist/src`, the production `node_modules`) and this machine's Node.js with the
 * libraries it links, on busybox for a shell, as an OCI archive `ctr images import` and `cluster up --helm`
 * read. `IMAGE_LAYOUT` is what both recipes must agree on; a test reads the Dockerfile against it.
 */

const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;

export const FAKEGPU_IMAGE = `fakegpu.local/fakegpu:${version}`;

export const IMAGE_LAYOUT = {
  workdir: '/opt/fakegpu',
  entrypoint: ['node', '/opt/fakegpu/bin/fakegpu.js'],
  cmd: ['plugin'],
  /** The checkout's paths copied under `workdir`, as the Dockerfile's COPY lines name them. */
  copies: ['node_modules', 'dist/src', 'package.json', 'bin', 'proto', 'deploy/deviceclasses.yaml'],
  /** The IMEX daemon stand-in the chart's ComputeDomain DaemonSets run. */
  daemon: '/usr/local/bin/compute-domain-daemon',
  /** Root: the plugin makes device nodes (MKNOD) and writes host paths; the chart drops the rest. */
  user: 'root',
} as const;

/**
 * The production dependencies' top-level folders, as npm resolves them (no dev tools in the image); a
 * nested one (`a/node_modules/b`) comes with its parent's folder.
 */
function productionModules(): string[] {
  const r = spawnSync('npm', ['ls', '--omit=dev', '--parseable', '--all'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (r.error || r.status !== 0)
    throw new FakegpuError('image', `npm ls --omit=dev failed: ${(r.stderr || String(r.error)).trim()}`);
  return r.stdout
    .split('\n')
    .map((p) => p.trim())
    .filter((p) => p !== '' && p !== REPO_ROOT && !relative(REPO_ROOT, p).includes('/node_modules/'));
}

/** Node.js and the shared libraries it links (glibc's, libstdc++), at their own paths. */
function copyNode(root: string): void {
  const node = process.execPath;
  copyFileSync(node, join(root, 'usr', 'local', 'bin', 'node'));
  const ldd = spawnSync('ldd', [node], { encoding: 'utf8' });
  if (ldd.status !== 0) throw new FakegpuError('image', `ldd ${node} failed: ${ldd.stderr.trim()}`);
  for (const line of ldd.stdout.split('\n')) {
    const lib = /(\/\S+) \(0x/.exec(line)?.[1];
    if (!lib) continue;
    mkdirSync(join(root, dirname(lib)), { recursive: true });
    // A link (ld-linux, libc.so.6) is copied as what it points at.
    copyFileSync(lib, join(root, lib));
  }
}

export function buildFakegpuImage(
  log: (s: string) => void,
  out = join(cacheRoot(), 'images', `fakegpu-${version}.tar`),
): { archive: string; ref: string; bytes: number } {
  const root = mkdtempSync(join(tmpdir(), 'fakegpu-image-root-'));
  try {
    busyboxRootfs(ensureBusybox(log), root);
    mkdirSync(join(root, 'usr', 'local', 'bin'), { recursive: true });
    copyNode(root);
    const app = join(root, IMAGE_LAYOUT.workdir);
    for (const c of IMAGE_LAYOUT.copies) {
      if (c === 'node_modules') continue;
      cpSync(join(REPO_ROOT, c), join(app, c), { recursive: true });
    }
    for (const m of productionModules())
      cpSync(m, join(app, relative(REPO_ROOT, m)), { recursive: true, dereference: true });
    writeFileSync(join(root, IMAGE_LAYOUT.daemon), DAEMON_SCRIPT, { mode: 0o755 });
    log(`packing ${FAKEGPU_IMAGE}`);
    ociArchive(
      root,
      FAKEGPU_IMAGE,
      { entrypoint: [...IMAGE_LAYOUT.entrypoint], cmd: [...IMAGE_LAYOUT.cmd], workdir: IMAGE_LAYOUT.workdir },
      out,
    );
    return { archive: out, ref: FAKEGPU_IMAGE, bytes: statSync(out).size };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
