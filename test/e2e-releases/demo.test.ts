import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { releaseFiles } from '../../src/local-cluster/artifacts.js';
import { cacheRoot, clusterComponents, placeOf } from '../../src/local-cluster/build.js';
import { clusterDown } from '../../src/local-cluster/cluster.js';
import { ensureBusybox } from '../../src/local-cluster/image.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { pinsOf, serveMirror, writeRelease } from '../support/release-mirror.js';

/**
 * `fakegpu demo` on an empty cache with `FAKEGPU_MIRROR` at a mirror served on loopback: every component
 * that has an official release is fetched and checked, none of them built, and the demo pod sees its GPU.
 * The mirror holds this machine's own builds, laid out and checksummed as each project releases them,
 * pinned through `FAKEGPU_RELEASE_PINS` (a mirror serves only pinned files) and served over plain http on
 * loopback with `FAKEGPU_MIRROR_ALLOW_HTTP=1`.
 */

const DIR = process.env['FAKEGPU_E2E_RELEASES_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-releases-cluster');

describe('the demo from a release mirror', () => {
  const root = mkdtempSync(join(tmpdir(), 'fakegpu-mirror-'));
  const cache = mkdtempSync(join(tmpdir(), 'fakegpu-cache-'));
  after(async () => {
    await clusterDown({ dir: DIR, purge: true, log: () => undefined });
    rmSync(root, { recursive: true, force: true });
    rmSync(cache, { recursive: true, force: true });
  });

  it('fetches every released component, builds none of them, and runs the demo pod', async () => {
    const fetched: string[] = [];
    const pins: Record<string, string> = {};
    for (const { c, paths } of clusterComponents()) {
      if (releaseFiles(c) === null) continue;
      const { id, out } = placeOf(c, paths);
      writeRelease(root, c, (name) => readFileSync(join(out, name)));
      Object.assign(pins, pinsOf(root, c));
      fetched.push(id);
    }
    const pinsFile = join(cache, 'pins.json');
    writeFileSync(pinsFile, JSON.stringify(pins));
    // Debian's busybox for the test image is no release component: taken from this cache, not fetched.
    mkdirSync(join(cache, 'busybox'));
    copyFileSync(
      ensureBusybox(() => undefined),
      join(cache, 'busybox', 'busybox'),
    );
    const mirror = await serveMirror(root);
    const started = Date.now();
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [join(REPO_ROOT, 'bin', 'fakegpu.js'), 'demo', '--dir', DIR],
        {
          env: {
            ...process.env,
            FAKEGPU_CACHE: cache,
            FAKEGPU_MIRROR: mirror.url,
            FAKEGPU_MIRROR_ALLOW_HTTP: '1',
            FAKEGPU_RELEASE_PINS: pinsFile,
          },
          timeout: 600_000,
          maxBuffer: 16 * 1024 * 1024,
        },
        (err, stdout, stderr) => {
          resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr });
        },
      );
    });
    await mirror.close();
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(`demo from the mirror: ${seconds.toFixed(1)} s\n`);
    assert.equal(run.code, 0, run.stderr.slice(-3000));
    for (const id of fetched)
      assert.match(
        run.stderr,
        new RegExp(`fetched ${id} \\S+ from 127\\.0\\.0\\.1:\\d+, sha256 checked`),
        id,
      );
    const built = [...run.stderr.matchAll(/building (\S+) /g)].map((m) => m[1]);
    assert.deepEqual(built, ['pause'], 'only our own pause program is built');
    assert.match(run.stdout + run.stderr, /GPU 0: NVIDIA H100 80GB HBM3/);
  });
});
