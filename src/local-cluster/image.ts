import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { FakegpuError } from '../errors.js';
import { DAEMON_SCRIPT } from '../node/imex-daemon/daemon-script.js';
import { cacheRoot } from './build.js';

/**
 * Container images without a registry: a root filesystem becomes one uncompressed layer in an OCI
 * image layout, packed as an archive `ctr images import` reads.
 */

export const PAUSE_IMAGE = 'fakegpu.local/pause:1.0.0';
export const TEST_IMAGE = 'fakegpu.local/busybox:1.35.0';
/** fakegpu's IMEX daemon stand-in (busybox and a script); the tag follows the script. */
export const DAEMON_IMAGE = `fakegpu.local/compute-domain-daemon:0.1.0-${sha256(DAEMON_SCRIPT).slice(0, 8)}`;

function run(cmd: string, args: string[], what: string, cwd?: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw new FakegpuError(what, `cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0)
    throw new FakegpuError(
      what,
      `${cmd} ${args.join(' ')} failed: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`,
    );
  return r.stdout;
}

function sha256(b: Buffer | string): string {
  return createHash('sha256').update(b).digest('hex');
}

interface ImageConfig {
  entrypoint?: string[];
  cmd?: string[];
  workdir?: string;
}

/** Packs `rootfs` as an OCI archive named `ref`; returns the archive path. */
export function ociArchive(rootfs: string, ref: string, cfg: ImageConfig, out: string): string {
  const work = mkdtempSync(join(tmpdir(), 'fakegpu-image-'));
  try {
    const layout = join(work, 'layout');
    const blobs = join(layout, 'blobs', 'sha256');
    mkdirSync(blobs, { recursive: true });
    const layerTar = join(work, 'layer.tar');
    run(
      'tar',
      [
        '--sort=name',
        '--mtime=@0',
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        '-C',
        rootfs,
        '-cf',
        layerTar,
        '.',
      ],
      'image layer',
    );
    const layer = readFileSync(layerTar);
    const layerDigest = sha256(layer);
    writeFileSync(join(blobs, layerDigest), layer);
    const config = Buffer.from(
      JSON.stringify({
        architecture: process.arch === 'arm64' ? 'arm64' : 'amd64',
        os: 'linux',
        config: {
          Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
          ...(cfg.entrypoint ? { Entrypoint: cfg.entrypoint } : {}),
          ...(cfg.cmd ? { Cmd: cfg.cmd } : {}),
          ...(cfg.workdir ? { WorkingDir: cfg.workdir } : {}),
        },
        rootfs: { type: 'layers', diff_ids: [`sha256:${layerDigest}`] },
      }),
    );
    writeFileSync(join(blobs, sha256(config)), config);
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: {
          mediaType: 'application/vnd.oci.image.config.v1+json',
          digest: `sha256:${sha256(config)}`,
          size: config.length,
        },
        layers: [
          {
            mediaType: 'application/vnd.oci.image.layer.v1.tar',
            digest: `sha256:${layerDigest}`,
            size: layer.length,
          },
        ],
      }),
    );
    writeFileSync(join(blobs, sha256(manifest)), manifest);
    writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    writeFileSync(
      join(layout, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        manifests: [
          {
            mediaType: 'application/vnd.oci.image.manifest.v1+json',
            digest: `sha256:${sha256(manifest)}`,
            size: manifest.length,
            annotations: {
              'io.containerd.image.name': ref,
              'org.opencontainers.image.ref.name': ref.split(':').pop(),
            },
          },
        ],
      }),
    );
    mkdirSync(dirname(out), { recursive: true });
    run(
      'tar',
      ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '-C', layout, '-cf', out, '.'],
      'image archive',
    );
    return out;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Debian's statically linked busybox: a POSIX shell and coreutils in one file, from the package archive. */
export function ensureBusybox(log: (s: string) => void): string {
  const dir = join(cacheRoot(), 'busybox');
  const bin = join(dir, 'busybox');
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  log('fetching Debian busybox-static for the test image');
  const dl = mkdtempSync(join(tmpdir(), 'fakegpu-busybox-'));
  try {
    let r = spawnSync('apt-get', ['download', 'busybox-static'], { cwd: dl, encoding: 'utf8' });
    if (r.status !== 0 && process.getuid?.() === 0) {
      spawnSync('apt-get', ['update', '-qq'], { encoding: 'utf8' });
      r = spawnSync('apt-get', ['download', 'busybox-static'], { cwd: dl, encoding: 'utf8' });
    }
    if (r.error || r.status !== 0) {
      throw new FakegpuError(
        'test image',
        `could not download Debian's busybox-static (${(r.stderr || String(r.error)).trim().split('\n').pop() ?? ''}); on Debian/Ubuntu run "apt-get update" and retry, or put a static busybox at ${bin}`,
      );
    }
    const deb = readdirSync(dl).find((f) => f.endsWith('.deb'));
    if (!deb) throw new FakegpuError('test image', 'apt-get download produced no .deb');
    run('dpkg-deb', ['-x', join(dl, deb), join(dl, 'x')], 'test image');
    copyFileSync(join(dl, 'x', 'bin', 'busybox'), bin);
    spawnSync('chmod', ['0755', bin]);
    return bin;
  } finally {
    rmSync(dl, { recursive: true, force: true });
  }
}

export function busyboxRootfs(busybox: string, root: string): void {
  mkdirSync(join(root, 'bin'), { recursive: true });
  copyFileSync(busybox, join(root, 'bin', 'busybox'));
  spawnSync('chmod', ['0755', join(root, 'bin', 'busybox')]);
  for (const applet of run(busybox, ['--list-full'], 'test image').split('\n')) {
    const path = applet.trim();
    if (!path || path === 'bin/busybox') continue;
    mkdirSync(join(root, dirname(path)), { recursive: true });
    if (!existsSync(join(root, path))) symlinkSync('/bin/busybox', join(root, path));
  }
  for (const d of ['etc', 'tmp', 'proc', 'sys', 'dev', 'root']) mkdirSync(join(root, d), { recursive: true });
  writeFileSync(
    join(root, 'etc', 'passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n',
  );
  writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\nnobody:x:65534:\n');
}

/** Builds (once) the pause and test image archives into the cache and returns their paths. */
export function ensureImageArchives(
  pauseBinary: string,
  log: (s: string) => void,
): { pause: string; test: string; daemon: string } {
  const dir = join(cacheRoot(), 'images');
  const pause = join(dir, 'pause.tar');
  const test = join(dir, 'busybox.tar');
  if (!existsSync(pause)) {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-pause-'));
    try {
      copyFileSync(pauseBinary, join(root, 'pause'));
      spawnSync('chmod', ['0755', join(root, 'pause')]);
      ociArchive(root, PAUSE_IMAGE, { entrypoint: ['/pause'] }, pause);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  if (!existsSync(test)) {
    const busybox = ensureBusybox(log);
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-rootfs-'));
    try {
      busyboxRootfs(busybox, root);
      ociArchive(root, TEST_IMAGE, { cmd: ['sh'] }, test);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  const daemon = join(dir, `compute-domain-daemon-${DAEMON_IMAGE.split('-').pop() ?? ''}.tar`);
  if (!existsSync(daemon)) {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-rootfs-'));
    try {
      busyboxRootfs(ensureBusybox(log), root);
      const script = join(root, 'usr', 'bin', 'compute-domain-daemon');
      mkdirSync(dirname(script), { recursive: true });
      writeFileSync(script, DAEMON_SCRIPT, { mode: 0o755 });
      ociArchive(root, DAEMON_IMAGE, { entrypoint: ['compute-domain-daemon'], cmd: ['run'] }, daemon);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  return { pause, test, daemon };
}
