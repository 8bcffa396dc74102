import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  createWriteStream,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebStream } from 'node:stream/web';
import { FakegpuError } from '../errors.js';
import { duration } from '../process/progress.js';
import {
  isCurrent,
  placeOf,
  stampRelease,
  componentVersion,
  type Component,
  type Toolchain,
} from './build.js';

/**
 * The official release artifacts of the cluster's upstream components, fetched and checked against the
 * checksums their projects publish, so `cluster up` takes seconds where a build takes half an hour. Where
 * the release sites (or `FAKEGPU_MIRROR`) cannot be reached, or do not have a file, the component is built
 * from the Go module proxy as before (build.ts); a file whose checksum does not match is refused.
 *
 * `FAKEGPU_MIRROR=<url>`: an internal mirror instead of the release sites, holding each site's paths under a
 * folder named for its host, as `wget --mirror` lays them out: `<url>/dl.k8s.io/release/v1.37.2/bin/…`,
 * `<url>/github.com/etcd-io/etcd/releases/download/…`, `<url>/get.helm.sh/…`. `FAKEGPU_MIRROR=off`: fetch
 * nothing, build what is not current.
 */

/** One file of a release: the file, the file of checksums that names it, and the binaries taken from it. */
export interface ReleaseFile {
  /** `https://host/path` on the release site. */
  url: string;
  /** The published checksums: a bare sha256, or `sha256sum` lines naming the file. */
  sums: string;
  /** A `.tar.gz` (or `.tgz`): path inside it → binary name. Absent: the file is the binary `binary`. */
  members?: Readonly<Record<string, string>>;
  binary?: string;
}

const GITHUB = 'https://github.com';
const arch = (): string => (process.arch === 'arm64' ? 'arm64' : 'amd64');

/**
 * Where each component's official release keeps its linux binaries, as each project's release script names
 * them: kubernetes/release pkg/release (dl.k8s.io, a bare `.sha256` per binary), etcd scripts/release.sh
 * (SHA256SUMS), containerd's Makefile `static-release`, runc script/release_build.sh (one runc.sha256sum),
 * containernetworking/plugins' release workflow, cri-tools' and Helm's release targets. Null for ours
 * (pause), for KWOK, and for what only tests and integrations build.
 */
export function releaseFiles(c: Component): ReleaseFile[] | null {
  const v = componentVersion(c);
  const a = arch();
  const names = Object.values(c.binaries);
  const gh = (repo: string, file: string, sums = `${file}.sha256sum`): ReleaseFile => ({
    url: `${GITHUB}/${repo}/releases/download/v${v}/${file}`,
    sums: `${GITHUB}/${repo}/releases/download/v${v}/${sums}`,
  });
  switch (c.module) {
    case 'kubernetes':
      return names.map((name) => {
        const url = `https://dl.k8s.io/release/v${v}/bin/linux/${a}/${name}`;
        return { url, sums: `${url}.sha256`, binary: name };
      });
    case 'etcd': {
      const dir = `etcd-v${v}-linux-${a}`;
      return [{ ...gh('etcd-io/etcd', `${dir}.tar.gz`, 'SHA256SUMS'), members: { [`${dir}/etcd`]: 'etcd' } }];
    }
    case 'containerd':
      // The static build: the plain one links glibc dynamically, which a machine may not match.
      return [
        {
          ...gh('containerd/containerd', `containerd-static-${v}-linux-${a}.tar.gz`),
          members: Object.fromEntries(names.map((n) => [`bin/${n}`, n])),
        },
      ];
    case 'runc':
      return [{ ...gh('opencontainers/runc', `runc.${a}`, 'runc.sha256sum'), binary: 'runc' }];
    case 'cni': {
      const file = `cni-plugins-linux-${a}-v${v}.tgz`;
      return [
        {
          ...gh('containernetworking/plugins', file, `${file}.sha256`),
          members: Object.fromEntries(names.map((n) => [n, n])),
        },
      ];
    }
    case 'crictl': {
      const file = `crictl-v${v}-linux-${a}.tar.gz`;
      return [{ ...gh('kubernetes-sigs/cri-tools', file, `${file}.sha256`), members: { crictl: 'crictl' } }];
    }
    case 'helm': {
      const url = `https://get.helm.sh/helm-v${v}-linux-${a}.tar.gz`;
      return [{ url, sums: `${url}.sha256sum`, members: { [`linux-${a}/helm`]: 'helm' } }];
    }
    // KWOK's releases publish no checksums (kubernetes-sigs/kwok hack/releases.sh uploads the bare
    // binaries), so it is always built, and only for a cluster with simulated nodes.
    default:
      return null;
  }
}

/** `FAKEGPU_MIRROR`'s form of a release site's URL: the host becomes the first folder. */
export function mirrored(url: string, mirror: string | undefined): string {
  if (mirror === undefined || mirror === '') return url;
  const u = new URL(url);
  return `${mirror.replace(/\/+$/, '')}/${u.host}${u.pathname}`;
}

/** The sha256 a checksum file gives for `file`: its line naming it, or the file's one bare hash. */
export function publishedSha256(text: string, file: string): string | null {
  const lines = text.trim().split('\n');
  for (const line of lines) {
    const m = /^([0-9a-f]{64})\s+[*]?(\S+)\s*$/i.exec(line.trim());
    if (m && basename(m[2] ?? '') === file) return (m[1] ?? '').toLowerCase();
  }
  const bare = /^([0-9a-f]{64})\s*$/i.exec(text.trim());
  return bare ? (bare[1] ?? '').toLowerCase() : null;
}

/** Why a file could not be had (the component is then built), as opposed to a refused one (thrown). */
class Unavailable extends Error {
  constructor(
    message: string,
    /** The host did not answer at all: not asked again in this run. */
    readonly hostDown = false,
  ) {
    super(message);
  }
}

const causeOf = (e: unknown): string =>
  e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e);

async function get(url: string, timeoutMs: number): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
  } catch (e) {
    throw new Unavailable(`${new URL(url).host} is not reachable (${causeOf(e)})`, true);
  }
  if (!res.ok || res.body === null) {
    await res.body?.cancel();
    throw new Unavailable(`${url} answered HTTP ${res.status}${res.body === null ? ' with no body' : ''}`);
  }
  return res;
}

/** Downloads `f` into `dir`, checked against its published sha256; returns the file's path. */
async function fetchChecked(f: ReleaseFile, mirror: string | undefined, dir: string): Promise<string> {
  const file = basename(new URL(f.url).pathname);
  const sumsUrl = mirrored(f.sums, mirror);
  const url = mirrored(f.url, mirror);
  const path = join(dir, file);
  let want: string | null;
  let got: string;
  // Whatever breaks on the way (a reset, a timeout mid-body) leaves the component to the build; only a
  // file that arrived whole and differs is refused.
  try {
    want = publishedSha256(await (await get(sumsUrl, 15_000)).text(), file);
    if (want === null) throw new Unavailable(`${sumsUrl} gives no sha256 for ${file}`);
    const res = await get(url, 15 * 60_000);
    const hash = createHash('sha256');
    const body = Readable.fromWeb(res.body as WebStream<Uint8Array>);
    body.on('data', (chunk: Buffer) => hash.update(chunk));
    await pipeline(body, createWriteStream(path));
    got = hash.digest('hex');
  } catch (e) {
    if (e instanceof Unavailable) throw e;
    throw new Unavailable(`${file} from ${url} did not arrive whole (${causeOf(e)})`);
  }
  if (got !== want)
    throw new FakegpuError(
      'download',
      `${file} from ${url} has sha256 ${got}, but ${sumsUrl} publishes ${want}; refusing it`,
    );
  return path;
}

/** The binaries of `f`, downloaded into `dir`, as name → path there. */
function binariesOf(f: ReleaseFile, path: string, dir: string): Record<string, string> {
  if (f.members === undefined) return { [f.binary ?? basename(path)]: path };
  const into = join(dir, 'x');
  mkdirSync(into);
  // As root, tar would keep the archive's owners (a release built in CI records uid 1001): the files
  // are made root's, with their modes from the umask; only the chmod below makes them executable.
  const r = spawnSync('tar', ['--no-same-owner', '--no-same-permissions', '-xzf', path, '-C', into], {
    encoding: 'utf8',
  });
  if (r.error || r.status !== 0)
    throw new Unavailable(`tar could not unpack ${basename(path)}: ${(r.stderr || String(r.error)).trim()}`);
  const out: Record<string, string> = {};
  for (const [member, name] of Object.entries(f.members)) {
    const p = join(into, member);
    if (!existsSync(p) || !lstatSync(p).isFile())
      throw new Unavailable(`${basename(path)} has no file ${member}`);
    out[name] = p;
  }
  return out;
}

/**
 * Fetches one component's release into its folder and stamps it; where it cannot be had, says why in one
 * line. Every binary is in place before the stamp is written, so a crash leaves it to be fetched
 * or built again.
 */
async function fetchComponent(
  c: Component,
  paths: Toolchain,
  files: ReleaseFile[],
  mirror: string | undefined,
  log: (line: string) => void,
): Promise<'fetched' | 'unavailable' | 'host down'> {
  const { id, out } = placeOf(c, paths);
  mkdirSync(out, { recursive: true });
  // What a fetch killed half-way left behind (hundreds of MB for Kubernetes).
  for (const f of readdirSync(out))
    if (f.startsWith(`.${id}.fetch-`)) rmSync(join(out, f), { recursive: true, force: true });
  const work = mkdtempSync(join(out, `.${id}.fetch-`));
  const started = Date.now();
  try {
    const got: Record<string, string> = {};
    for (const [i, f] of files.entries()) {
      const dir = join(work, String(i));
      mkdirSync(dir);
      Object.assign(got, binariesOf(f, await fetchChecked(f, mirror, dir), dir));
    }
    // No stamp while binaries are replaced: a crash in between leaves the component to fetch again.
    rmSync(join(out, `.${id}.stamp`), { force: true });
    for (const [name, path] of Object.entries(got)) {
      chmodSync(path, 0o755);
      renameSync(path, join(out, name));
    }
    stampRelease(c, paths);
    const from = new URL(mirrored(files[0]?.url ?? '', mirror)).host;
    log(
      `fetched ${id} ${componentVersion(c)} from ${from}, sha256 checked, in ${duration((Date.now() - started) / 1000)}`,
    );
    return 'fetched';
  } catch (e) {
    if (!(e instanceof Unavailable)) throw e;
    log(`${id} ${componentVersion(c)}: ${e.message}; building it instead`);
    return e.hostDown ? 'host down' : 'unavailable';
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Fetches the official release of each component that is not current here and has one. Hosts found
 * unreachable are not asked again in this call; what is not fetched is left to the build.
 */
export async function fetchReleases(
  repoRoot: string,
  components: readonly { c: Component; paths: Toolchain }[],
  log: (line: string) => void,
  mirror: string | undefined = process.env['FAKEGPU_MIRROR'],
): Promise<void> {
  if (mirror === 'off') return;
  if (mirror !== undefined && mirror !== '' && !URL.canParse(mirror))
    throw new FakegpuError(
      'FAKEGPU_MIRROR',
      `${JSON.stringify(mirror)} is not a URL; give http(s)://host[:port][/path], or off`,
    );
  const down = new Set<string>();
  for (const { c, paths } of components) {
    const files = releaseFiles(c);
    if (files === null || files.length === 0 || isCurrent(repoRoot, c, paths)) continue;
    const host = new URL(mirrored(files[0]?.url ?? '', mirror)).host;
    if (down.has(host)) continue;
    if ((await fetchComponent(c, paths, files, mirror, log)) === 'host down') down.add(host);
  }
}
