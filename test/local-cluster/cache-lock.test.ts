import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { withCacheLock } from '../../src/local-cluster/cache-lock.js';

/** The build cache's lock: one builder of a component folder at a time, a dead holder's lock taken over. */

describe('the cache lock', () => {
  it('lets one holder in at a time; the other waits, says whom for, and goes on when it is free', async () => {
    const lock = join(mkdtempSync(join(tmpdir(), 'fakegpu-lock-')), '.etcd.lock');
    const lines: string[] = [];
    let inside = 0;
    let most = 0;
    const work = (ms: number) => async (): Promise<number> => {
      most = Math.max(most, ++inside);
      await sleep(ms);
      inside--;
      return ms;
    };
    const first = withCacheLock(lock, 'building etcd', (l) => lines.push(l), work(300));
    const second = withCacheLock(lock, 'building etcd', (l) => lines.push(l), work(10), 100);
    assert.deepEqual(await Promise.all([first, second]), [300, 10]);
    assert.equal(most, 1, 'never two holders at once');
    assert.ok(!existsSync(lock), 'released');
    assert.match(
      lines[0] ?? '',
      new RegExp(
        `^waiting for pid ${String(process.pid)} \\(building etcd\\) to finish with building etcd; \\d+s so far$`,
      ),
    );
  });

  it('takes over a lock whose holder died, and one left unreadable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-lock-'));
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const lock = join(dir, '.runc.lock');
    writeFileSync(lock, JSON.stringify({ pid: dead, what: 'building runc', since: 0, token: 'x' }));
    assert.equal(
      await withCacheLock(
        lock,
        'building runc',
        () => undefined,
        () => Promise.resolve('ran'),
      ),
      'ran',
    );
    assert.ok(!existsSync(lock));
  });

  it('releases the lock when the work throws', async () => {
    const lock = join(mkdtempSync(join(tmpdir(), 'fakegpu-lock-')), '.cni.lock');
    await assert.rejects(
      withCacheLock(
        lock,
        'building cni',
        () => undefined,
        () => Promise.reject(new Error('go build failed')),
      ),
      /go build failed/,
    );
    assert.ok(!existsSync(lock));
  });
});
