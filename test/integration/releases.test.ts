import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fetchReleases, releaseFiles } from '../../src/local-cluster/artifacts.js';
import { COMPONENTS, ensureComponent, isCurrent, toolchainPaths } from '../../src/local-cluster/build.js';
import { REPO_ROOT } from '../../src/process/repo.js';

describe('an unreachable FAKEGPU_MIRROR', () => {
  it('falls back to building the component from the Go module proxy', async () => {
    const crictl = COMPONENTS.find((c) => c.module === 'crictl');
    assert.ok(crictl);
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const { port } = closed.address() as AddressInfo;
    await new Promise((r) => closed.close(r));
    const saved = process.env['FAKEGPU_CACHE'];
    const cache = mkdtempSync(join(tmpdir(), 'fakegpu-cache-'));
    process.env['FAKEGPU_CACHE'] = cache;
    const lines: string[] = [];
    const log = (l: string): void => {
      lines.push(l);
    };
    try {
      const paths = toolchainPaths();
      // Pinned, so that the mirror is asked at all (it serves only pinned files).
      const pins = Object.fromEntries((releaseFiles(crictl) ?? []).map((f) => [f.url, 'a'.repeat(64)]));
      await fetchReleases(REPO_ROOT, [{ c: crictl, paths }], log, {
        mirror: `http://127.0.0.1:${port}`,
        allowHttp: true,
        pins,
      });
      assert.match(
        lines[0] ?? '',
        /crictl 1\.37\.0: 127\.0\.0\.1:\d+ is not reachable .*; building it instead/,
      );
      // Two builds of it at once (two `cluster up` on one machine): one builds, the other waits on the
      // cache lock and finds it current; neither takes the other's half-written file.
      await Promise.all([
        ensureComponent(REPO_ROOT, 'crictl', log),
        ensureComponent(REPO_ROOT, 'crictl', log),
      ]);
      assert.equal(lines.filter((l) => /^built crictl in /.test(l)).length, 1, lines.join('\n'));
      assert.equal(lines.filter((l) => /^building crictl /.test(l)).length, 1, lines.join('\n'));
      assert.deepEqual(
        readdirSync(paths.bin).filter(
          (f) => f.startsWith('.crictl.') && !f.endsWith('.stamp') && !f.endsWith('.took'),
        ),
        [],
        'no lock or temporary file left',
      );
      assert.ok(isCurrent(REPO_ROOT, crictl, paths));
      assert.notEqual(readFileSync(join(paths.bin, '.crictl.stamp'), 'utf8').trim(), 'release 1.37.0');
      const v = spawnSync(join(paths.bin, 'crictl'), ['--version'], { encoding: 'utf8' });
      assert.match(v.stdout, /crictl version/);
    } finally {
      if (saved === undefined) delete process.env['FAKEGPU_CACHE'];
      else process.env['FAKEGPU_CACHE'] = saved;
      rmSync(cache, { recursive: true, force: true });
    }
  });
});
