import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { cacheRoot } from '../../src/local-cluster/build.js';
import { refuseUntrustedToolchain, untrustedReason } from '../../src/local-cluster/trust.js';

const root = process.geteuid?.() === 0;
const me = process.geteuid?.() ?? 0;
const scratch = mkdtempSync(join(tmpdir(), 'fakegpu-trust-'));
after(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function folder(name: string, mode = 0o755): string {
  const d = join(scratch, name);
  mkdirSync(d, { recursive: true });
  chmodSync(d, mode);
  return d;
}

describe('paths root runs binaries from (sudo -E)', () => {
  it('accepts a folder and file the user alone can change, under sticky /tmp', () => {
    const d = folder('mine');
    writeFileSync(join(d, 'etcd'), '', { mode: 0o755 });
    assert.equal(untrustedReason(join(d, 'etcd'), me), null);
    assert.equal(untrustedReason(join(d, 'not-yet', 'made'), me), null);
  });

  it('refuses a group- or world-writable binary or folder, or one below such a folder', () => {
    const d = folder('shared', 0o775);
    assert.equal(untrustedReason(d, me), `${d} is group-writable (mode 775)`);
    writeFileSync(join(folder('w'), 'kubelet'), '', { mode: 0o757 });
    chmodSync(join(scratch, 'w', 'kubelet'), 0o757);
    assert.equal(
      untrustedReason(join(scratch, 'w', 'kubelet'), me),
      `${join(scratch, 'w', 'kubelet')} is world-writable (mode 757)`,
    );
    const below = join(folder('open', 0o777), 'bin');
    mkdirSync(below);
    assert.equal(untrustedReason(below, me), `${join(scratch, 'open')} is world-writable (mode 777)`);
    // Sticky like /tmp still lets another user replace it when it is the path itself.
    const sticky = folder('sticky', 0o1777);
    assert.match(untrustedReason(sticky, me) ?? '', /is world-writable \(mode 1777\)$/);
  });

  it('follows a link to what it names', () => {
    const target = folder('elsewhere', 0o777);
    const links = folder('links');
    symlinkSync(target, join(links, 'bin'));
    assert.equal(untrustedReason(join(links, 'bin'), me), `${target} is world-writable (mode 777)`);
  });

  it("refuses a path another user owns (the invoking user's ~/.cache)", { skip: !root }, () => {
    const home = folder('home-of-nobody');
    chownSync(home, 65534, 65534);
    const cache = join(home, '.cache', 'fakegpu', 'k8s-v1.37.2', 'bin');
    mkdirSync(cache, { recursive: true });
    assert.match(
      untrustedReason(cache, 0) ?? '',
      new RegExp(`^${home} is owned by uid 65534( \\(\\w+\\))?$`),
    );
    assert.throws(
      () => {
        refuseUntrustedToolchain({ bin: cache, cniBin: cache });
      },
      {
        message: new RegExp(
          `^cluster binaries: ${home} is owned by uid 65534.*; running as root, fakegpu runs binaries and keeps the cluster only in paths root alone can change \\(owned by root, not group- or world-writable, every directory above them too\\); rebuild them in a cache root owns \\(FAKEGPU_CACHE\\)$`,
        ),
      },
    );
  });

  it(
    "as root, the cache is root's own, whatever $HOME and $XDG_CACHE_HOME sudo -E kept",
    { skip: !root },
    () => {
      const keys = ['FAKEGPU_CACHE', 'HOME', 'XDG_CACHE_HOME'] as const;
      const saved = keys.map((k) => process.env[k]);
      try {
        delete process.env['FAKEGPU_CACHE'];
        process.env['HOME'] = '/home/someone';
        process.env['XDG_CACHE_HOME'] = '/home/someone/.cache';
        assert.equal(cacheRoot(), join(userInfo().homedir, '.cache', 'fakegpu'));
        assert.notEqual(userInfo().homedir, '/home/someone');
        process.env['FAKEGPU_CACHE'] = '/srv/cache';
        assert.equal(cacheRoot(), '/srv/cache', 'an explicit cache is kept (and checked by cluster up)');
      } finally {
        keys.forEach((k, i) => {
          const v = saved[i];
          if (v === undefined) Reflect.deleteProperty(process.env, k);
          else process.env[k] = v;
        });
      }
    },
  );
});
