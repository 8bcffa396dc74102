import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  fetchOptionsFromEnv,
  fetchReleases,
  mirrored,
  PINNED_ARCHES,
  publishedSha256,
  releaseFiles,
  renderPins,
  type FetchOptions,
} from '../../src/local-cluster/artifacts.js';
import { RELEASE_PINS } from '../../src/local-cluster/release-pins.js';
import {
  COMPONENTS,
  isCurrent,
  kubernetesComponent,
  componentVersion,
  releaseComponents,
  type Component,
  type Toolchain,
} from '../../src/local-cluster/build.js';
import { defaultRelease } from '../../src/local-cluster/releases.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { FakegpuError } from '../../src/errors.js';
import { pinsOf, serveMirror, writeRelease } from '../support/release-mirror.js';

const component = (module: string): Component => {
  const c = COMPONENTS.find((x) => x.module === module);
  assert.ok(c, module);
  return c;
};
const etcd = component('etcd');
const runc = component('runc');
const cni = component('cni');
const kubernetes = kubernetesComponent(defaultRelease());
const content = (name: string): Buffer => Buffer.from(`#!/bin/sh\necho fake ${name}\n`);

describe('official release files', () => {
  it('are named as each project publishes them', () => {
    const urls = (c: Component): string[] => (releaseFiles(c) ?? []).flatMap((f) => [f.url, f.sums]);
    assert.deepEqual(urls(etcd), [
      'https://github.com/etcd-io/etcd/releases/download/v3.7.3/etcd-v3.7.3-linux-amd64.tar.gz',
      'https://github.com/etcd-io/etcd/releases/download/v3.7.3/SHA256SUMS',
    ]);
    assert.deepEqual(urls(runc), [
      'https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.amd64',
      'https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.sha256sum',
    ]);
    assert.equal(
      urls(kubernetes)[0],
      `https://dl.k8s.io/release/v${defaultRelease().version}/bin/linux/amd64/kube-apiserver`,
    );
    assert.equal(urls(kubernetes).length, 10, 'five binaries and their .sha256');
    assert.equal(
      urls(component('containerd'))[0],
      'https://github.com/containerd/containerd/releases/download/v2.4.2/containerd-static-2.4.2-linux-amd64.tar.gz',
    );
    assert.equal(releaseFiles(component('kwok')), null, 'KWOK publishes no checksums: built');
    assert.equal(releaseFiles(component('pause')), null, 'ours');
  });

  it("are of the version each component's go.mod pins, so a fetched binary is what a build would give", () => {
    // A release stamp stays current while VERSIONS does: a go.mod bumped alone would keep the old binary.
    for (const c of [...COMPONENTS, kubernetes]) {
      if (releaseFiles(c) === null) continue;
      const pkg = Object.keys(c.binaries)[0] ?? '';
      const mod = readFileSync(join(REPO_ROOT, 'upstream', c.folder ?? c.module, 'go.mod'), 'utf8');
      const pinned = [...mod.matchAll(/^\s*(?:require\s+)?(\S+) v(\S+)/gm)].find(
        (m) => pkg === m[1] || pkg.startsWith(`${m[1] ?? ''}/`),
      );
      assert.equal(pinned?.[2], componentVersion(c), `${c.module}: ${pkg}`);
    }
  });

  it('move under a mirror with the host as the first folder', () => {
    assert.equal(
      mirrored('https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubelet', 'http://127.0.0.1:9/m/'),
      'http://127.0.0.1:9/m/dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubelet',
    );
    assert.equal(mirrored('https://get.helm.sh/x.tar.gz', undefined), 'https://get.helm.sh/x.tar.gz');
  });

  it("read each project's checksum form: a bare hash, sha256sum lines, lists of several files", () => {
    const a = 'a'.repeat(64);
    const b = 'B'.repeat(64);
    assert.equal(publishedSha256(a, 'kubelet'), a);
    assert.equal(publishedSha256(`${a}\n`, 'crictl-v1.37.0-linux-amd64.tar.gz'), a);
    assert.equal(
      publishedSha256(`${a}  runc.arm64\n${b}  runc.amd64\n${a}  runc-1.5.3.tar.xz\n`, 'runc.amd64'),
      b.toLowerCase(),
    );
    assert.equal(publishedSha256(`${b} *./cni.tgz\n`, 'cni.tgz'), b.toLowerCase());
    assert.equal(publishedSha256(`${a}  other.tar.gz\n`, 'etcd.tar.gz'), null);
    assert.equal(publishedSha256('not a hash', 'x'), null);
  });

  it("read runc's clear-signed sums and dl.k8s.io's hash without a newline", () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    // runc's release signs runc.sha256sum in place (gpg --clearsign): the hash lines sit between the
    // armour's header and its signature, which no hash line matches.
    const clearSigned = [
      '-----BEGIN PGP SIGNED MESSAGE-----',
      'Hash: SHA256',
      '',
      `${a}  runc.arm64`,
      `${b}  runc.amd64`,
      '-----BEGIN PGP SIGNATURE-----',
      '',
      'iQIzBAEBCAAdFiEE' + 'x'.repeat(60),
      '=abcd',
      '-----END PGP SIGNATURE-----',
      '',
    ].join('\n');
    assert.equal(publishedSha256(clearSigned, 'runc.amd64'), b);
    assert.equal(publishedSha256(clearSigned, 'runc.s390x'), null);
    assert.equal(publishedSha256(a, 'kube-apiserver'), a, 'a bare hash with no newline');
  });
});

describe('fetching releases from FAKEGPU_MIRROR', () => {
  let root: string;
  let cache: string;
  let paths: Toolchain;
  let mirror: Awaited<ReturnType<typeof serveMirror>>;
  /** The loopback mirror, its files pinned as the committed table pins the official ones. */
  let at: (url: string) => FetchOptions;
  const lines: string[] = [];
  const log = (l: string): void => {
    lines.push(l);
  };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'fakegpu-mirror-'));
    for (const c of [etcd, runc, cni, kubernetes]) writeRelease(root, c, content);
    mirror = await serveMirror(root);
    const pins = pinsOf(root, etcd, runc, cni, kubernetes);
    at = (url) => ({ mirror: url, pins, allowHttp: true });
  });
  after(async () => {
    await mirror.close();
    rmSync(root, { recursive: true, force: true });
  });
  const freshCache = (): void => {
    cache = mkdtempSync(join(tmpdir(), 'fakegpu-cache-'));
    paths = { bin: join(cache, 'bin'), cniBin: join(cache, 'cni', 'bin') };
    lines.length = 0;
  };

  it('puts a good release in place, stamped current, without a build', async () => {
    freshCache();
    await fetchReleases(
      REPO_ROOT,
      [etcd, runc, kubernetes].map((c) => ({ c, paths })).concat([{ c: cni, paths }]),
      log,
      at(mirror.url),
    );
    assert.equal(readFileSync(join(paths.bin, 'etcd'), 'utf8'), content('etcd').toString());
    assert.equal(readFileSync(join(paths.bin, 'runc'), 'utf8'), content('runc').toString());
    assert.equal(readFileSync(join(paths.bin, 'kubelet'), 'utf8'), content('kubelet').toString());
    assert.equal(readFileSync(join(paths.cniBin, 'host-local'), 'utf8'), content('host-local').toString());
    assert.equal(readFileSync(join(paths.bin, '.etcd.stamp'), 'utf8').trim(), 'release 3.7.3');
    // The tarball records uid 1001; what is installed is this user's, as the trust check wants it.
    assert.equal(statSync(join(paths.bin, 'etcd')).uid, process.getuid?.());
    assert.equal(statSync(join(paths.bin, 'etcd')).mode & 0o777, 0o755);
    for (const c of [etcd, runc, cni, kubernetes]) assert.ok(isCurrent(REPO_ROOT, c, paths), c.module);
    assert.match(lines.join('\n'), /^fetched etcd 3\.7\.3 from 127\.0\.0\.1:\d+, sha256 checked/m);
    assert.equal(lines.length, 4, lines.join('\n'));
    const asked = mirror.requests.length;
    await fetchReleases(REPO_ROOT, [{ c: etcd, paths }], log, at(mirror.url));
    assert.equal(mirror.requests.length, asked, 'a current release is not fetched again');
    rmSync(cache, { recursive: true, force: true });
  });

  it('refuses a tampered file whose checksum the mirror made match, in one line naming it and both hashes', async () => {
    freshCache();
    // A hostile mirror's etcd, with the checksum of what it serves beside it: only the pin tells.
    const tampered = mkdtempSync(join(tmpdir(), 'fakegpu-mirror-'));
    writeRelease(tampered, etcd, (name) => Buffer.from(`${content(name).toString()}# and more\n`));
    const file = releaseFiles(etcd)?.[0]?.url.split('/').pop();
    const bad = await serveMirror(tampered);
    try {
      await assert.rejects(fetchReleases(REPO_ROOT, [{ c: etcd, paths }], log, at(bad.url)), (e: unknown) => {
        assert.ok(e instanceof FakegpuError);
        const m = e.message;
        assert.equal(m.split('\n').length, 1, m);
        assert.ok(m.includes(file ?? '?'), m);
        assert.equal(m.match(/[0-9a-f]{64}/g)?.length, 2, m);
        return true;
      });
      assert.ok(!existsSync(join(paths.bin, 'etcd')));
      assert.ok(!existsSync(join(paths.bin, '.etcd.stamp')));
      assert.deepEqual(readdirSync(paths.bin), [], 'no download left behind');
    } finally {
      await bad.close();
      rmSync(tampered, { recursive: true, force: true });
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it('leaves a component to the build, in one line, where the mirror is unreachable, and asks that host once', async () => {
    freshCache();
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const { port } = closed.address() as AddressInfo;
    await new Promise((r) => closed.close(r));
    await fetchReleases(
      REPO_ROOT,
      [etcd, runc].map((c) => ({ c, paths })),
      log,
      at(`http://127.0.0.1:${port}`),
    );
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(
      lines[0] ?? '',
      /^etcd 3\.7\.3: 127\.0\.0\.1:\d+ is not reachable \(.*\); building it instead$/,
    );
    assert.ok(!existsSync(join(paths.bin, 'etcd')));
    assert.ok(!isCurrent(REPO_ROOT, etcd, paths));
    rmSync(cache, { recursive: true, force: true });
  });

  it('leaves a component the mirror lacks to the build and goes on with the next', async () => {
    freshCache();
    const crictl = component('crictl');
    await fetchReleases(
      REPO_ROOT,
      [crictl, etcd].map((c) => ({ c, paths })),
      log,
      at(mirror.url),
    );
    assert.equal(
      lines[0],
      "crictl 1.37.0: crictl-v1.37.0-linux-amd64.tar.gz has no pin in fakegpu's release table, and a mirror serves only pinned files; building it instead",
    );
    assert.match(lines[1] ?? '', /^fetched etcd/);
    rmSync(cache, { recursive: true, force: true });
  });

  it('leaves a component to the build when its file breaks off half-way, and refuses a mirror that is no URL', async () => {
    freshCache();
    const sums = readFileSync(
      join(root, 'github.com/opencontainers/runc/releases/download/v1.5.3/runc.sha256sum'),
    );
    const cut = createHttpServer((req, res) => {
      if ((req.url ?? '').endsWith('.sha256sum')) {
        res.end(sums);
        return;
      }
      res.writeHead(200, { 'content-length': '100000' });
      res.write('#!/bin/sh\n');
      setTimeout(() => res.destroy(), 50);
    });
    await new Promise<void>((r) => cut.listen(0, '127.0.0.1', r));
    try {
      const { port } = cut.address() as AddressInfo;
      await fetchReleases(REPO_ROOT, [{ c: runc, paths }], log, at(`http://127.0.0.1:${port}`));
      assert.match(
        lines[0] ?? '',
        /^runc 1\.5\.3: runc\.amd64 from http:\/\/\S+ did not arrive whole \(.+\); building it instead$/,
      );
      assert.ok(!existsSync(join(paths.bin, 'runc')));
    } finally {
      cut.closeAllConnections();
      await new Promise((r) => cut.close(r));
    }
    await assert.rejects(fetchReleases(REPO_ROOT, [{ c: runc, paths }], log, { mirror: 'mirror.internal' }), {
      message: 'FAKEGPU_MIRROR: "mirror.internal" is not a URL; give http(s)://host[:port][/path], or off',
    });
    rmSync(cache, { recursive: true, force: true });
  });

  it('does nothing with FAKEGPU_MIRROR=off', async () => {
    freshCache();
    const asked = mirror.requests.length;
    await fetchReleases(REPO_ROOT, [{ c: etcd, paths }], log, { mirror: 'off' });
    assert.equal(mirror.requests.length, asked);
    assert.deepEqual(lines, []);
    rmSync(cache, { recursive: true, force: true });
  });

  it('refuses a plain-http mirror unless told, and a pins file that is not URL → sha256, each in one line', async () => {
    freshCache();
    const asked = mirror.requests.length;
    await assert.rejects(fetchReleases(REPO_ROOT, [{ c: etcd, paths }], log, { mirror: mirror.url }), {
      message: `FAKEGPU_MIRROR: ${JSON.stringify(mirror.url)} is plain http, which anyone on the path may answer; give https://, or set FAKEGPU_MIRROR_ALLOW_HTTP=1`,
    });
    assert.equal(mirror.requests.length, asked, 'nothing asked of it');
    const bad = join(cache, 'pins.json');
    writeFileSync(bad, JSON.stringify({ 'https://dl.k8s.io/x': 'ABC' }));
    assert.throws(() => fetchOptionsFromEnv({ FAKEGPU_RELEASE_PINS: bad }), {
      message: `FAKEGPU_RELEASE_PINS: ${bad}: "https://dl.k8s.io/x" → "ABC" is no URL → sha256 (64 lowercase hex digits)`,
    });
    const good = join(cache, 'good.json');
    writeFileSync(good, JSON.stringify({ 'https://dl.k8s.io/x': 'a'.repeat(64) }));
    const o = fetchOptionsFromEnv({ FAKEGPU_RELEASE_PINS: good, FAKEGPU_MIRROR_ALLOW_HTTP: '1' });
    assert.equal(o.pins?.['https://dl.k8s.io/x'], 'a'.repeat(64));
    assert.equal(o.allowHttp, true);
    rmSync(cache, { recursive: true, force: true });
  });

  it('refuses an archive whose member resolves outside it through a folder link', async () => {
    freshCache();
    const evil = mkdtempSync(join(tmpdir(), 'fakegpu-mirror-'));
    const f = releaseFiles(etcd)?.[0];
    assert.ok(f?.members);
    const member = Object.keys(f.members)[0] ?? '';
    const u = new URL(f.url);
    const stage = mkdtempSync(join(tmpdir(), 'fakegpu-evil-'));
    const outside = mkdtempSync(join(tmpdir(), 'fakegpu-outside-'));
    writeFileSync(join(outside, 'etcd'), 'not etcd\n');
    // The member's folder is a link to a folder outside: tar follows it when the file is looked up.
    symlinkSync(outside, join(stage, member.split('/')[0] ?? ''));
    mkdirSync(dirname(join(evil, u.host, u.pathname)), { recursive: true });
    const archive = join(evil, u.host, u.pathname);
    const r = spawnSync('tar', ['-czf', archive, '-C', stage, member.split('/')[0] ?? ''], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    const server = await serveMirror(evil);
    try {
      await assert.rejects(
        fetchReleases(REPO_ROOT, [{ c: etcd, paths }], log, {
          mirror: server.url,
          allowHttp: true,
          pins: pinsOf(evil, etcd),
        }),
        (e: unknown) => {
          assert.ok(e instanceof FakegpuError);
          assert.match(
            e.message,
            /^download: etcd-v3\.7\.3-linux-amd64\.tar\.gz: \S+ resolves to \S+, outside the archive; refusing it$/,
          );
          return true;
        },
      );
      assert.ok(!existsSync(join(paths.bin, 'etcd')));
      assert.equal(readFileSync(join(outside, 'etcd'), 'utf8'), 'not etcd\n', 'the file outside untouched');
    } finally {
      await server.close();
      for (const d of [evil, stage, outside, cache]) rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('the release pins', () => {
  it('are rendered from each official host’s published sums, for amd64 and arm64, sorted by URL', async () => {
    const asked: string[] = [];
    const hash = (s: string): string => createHash('sha256').update(s).digest('hex');
    const text = await renderPins([runc, etcd], (url) => {
      asked.push(url);
      // Each host's own form: runc's one list for every architecture, etcd's SHA256SUMS.
      const file = (u: string): string => u.split('/').pop() ?? '';
      const lines = (releaseFiles(runc, 'amd64') ?? [])
        .concat(
          releaseFiles(runc, 'arm64') ?? [],
          releaseFiles(etcd, 'amd64') ?? [],
          releaseFiles(etcd, 'arm64') ?? [],
        )
        .filter((f) => f.sums === url)
        .map((f) => `${hash(f.url)}  ${file(f.url)}`);
      return Promise.resolve(lines.join('\n'));
    });
    const urls = [...text.matchAll(/"(https:[^"]+)":\n\s+"([0-9a-f]{64})"/g)];
    assert.deepEqual(
      urls.map((m) => m[1]),
      [
        'https://github.com/etcd-io/etcd/releases/download/v3.7.3/etcd-v3.7.3-linux-amd64.tar.gz',
        'https://github.com/etcd-io/etcd/releases/download/v3.7.3/etcd-v3.7.3-linux-arm64.tar.gz',
        'https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.amd64',
        'https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.arm64',
      ],
    );
    for (const m of urls) assert.equal(m[2], hash(m[1] ?? ''), m[1]);
    assert.equal(new Set(asked).size, asked.length, 'each checksum file read once');
    await assert.rejects(
      renderPins([runc], () => Promise.resolve('')),
      {
        message:
          'https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.sha256sum gives no sha256 for runc.amd64',
      },
    );
  });

  it('name only files some cluster fetches, and the committed table is as the script writes it', async () => {
    const known = new Set(
      releaseComponents().flatMap((c) =>
        PINNED_ARCHES.flatMap((a) => (releaseFiles(c, a) ?? []).map((f) => f.url)),
      ),
    );
    for (const url of Object.keys(RELEASE_PINS))
      assert.ok(known.has(url), `${url} is pinned but never fetched`);
    const committed = readFileSync(join(REPO_ROOT, 'src', 'local-cluster', 'release-pins.ts'), 'utf8');
    // Rendered again from its own pins, as the hosts would answer had they published exactly these.
    const files = releaseComponents().flatMap((c) => PINNED_ARCHES.flatMap((a) => releaseFiles(c, a) ?? []));
    const fromPins = (sums: string): Promise<string> =>
      Promise.resolve(
        files
          .filter((f) => f.sums === sums && RELEASE_PINS[f.url] !== undefined)
          .map((f) => `${RELEASE_PINS[f.url] ?? ''}  ${f.url.split('/').pop() ?? ''}`)
          .join('\n'),
      );
    const pinned = releaseComponents().filter((c) =>
      PINNED_ARCHES.every((a) => (releaseFiles(c, a) ?? []).every((f) => RELEASE_PINS[f.url] !== undefined)),
    );
    assert.equal(committed, await renderPins(pinned, fromPins));
  });
});
