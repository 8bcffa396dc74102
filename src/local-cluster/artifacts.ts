import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  createWriteStream,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { basename, join, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebStream } from 'node:stream/web';
import { FakegpuError } from '../errors.js';
import { duration } from '../process/progress.js';
import { withCacheLock } from './cache-lock.js';
import { RELEASE_PINS } from './release-pins.js';
import {
  isCurrent,
  lockOf,
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
 *
 * Trust: a file with a pin in `release-pins.ts` (committed, refreshed by `npm run release-pins` from the
 * official hosts) must have that sha256, wherever it came from. A file without one is fetched only from
 * its official host, over HTTPS, and checked against the checksum that host publishes; a mirror serves
 * only pinned files, since a mirror that serves a file and its checksum vouches for itself. An `http:`
 * mirror is refused unless `FAKEGPU_MIRROR_ALLOW_HTTP=1` says so. `FAKEGPU_RELEASE_PINS=<file>` adds pins
 * (a JSON object of official URL → sha256) for a mirror of one's own builds.
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
/** Release names of the machines releases are fetched for; any other builds from source. */
const arch = (): string | null =>
  process.arch === 'arm64' ? 'arm64' : process.arch === 'x64' ? 'amd64' : null;

/** A checksum file is a few lines: anything longer than this is no checksum file. */
const MAX_SUMS_BYTES = 256 * 1024;
/** Larger than any of the components' archives unpacked (containerd's static build: about 150 MB). */
const MAX_UNPACKED_BYTES = 2 * 1024 ** 3;

/**
 * Where each component's official release keeps its linux binaries, as each project's release script names
 * them: kubernetes/release pkg/release (dl.k8s.io, a bare `.sha256` per binary), etcd scripts/release.sh
 * (SHA256SUMS), containerd's Makefile `static-release`, runc script/release_build.sh (one runc.sha256sum),
 * containernetworking/plugins' release workflow, cri-tools' and Helm's release targets. Null for ours
 * (pause), for KWOK, and for what only tests and integrations build.
 */
export function releaseFiles(c: Component, a: string | null = arch()): ReleaseFile[] | null {
  const v = componentVersion(c);
  if (a === null) return null;
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

/** The architectures `npm run release-pins` pins, by their release names. */
export const PINNED_ARCHES = ['amd64', 'arm64'] as const;

/**
 * The pin table's source text: every release file of `components` for each pinned architecture, with
 * the sha256 its official host publishes (`sums` answers a checksum file's URL with its text, over
 * HTTPS). A file its host gives no sha256 for stops it, named: a table with a hole would send that file
 * to the build without saying why.
 */
export async function renderPins(
  components: readonly Component[],
  sums: (url: string) => Promise<string>,
): Promise<string> {
  const pins: [string, string][] = [];
  const read = new Map<string, Promise<string>>();
  for (const c of components)
    for (const a of PINNED_ARCHES)
      for (const f of releaseFiles(c, a) ?? []) {
        if (!f.sums.startsWith('https://')) throw new Error(`${f.sums} is not HTTPS`);
        let text = read.get(f.sums);
        if (!text) read.set(f.sums, (text = sums(f.sums)));
        const file = basename(new URL(f.url).pathname);
        const sha = publishedSha256(await text, file);
        if (sha === null) throw new Error(`${f.sums} gives no sha256 for ${file}`);
        pins.push([f.url, sha]);
      }
  pins.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const rows = pins.map(([url, sha]) => `  ${JSON.stringify(url)}:\n    ${JSON.stringify(sha)},`);
  return `${PINS_HEADER}export const RELEASE_PINS: Readonly<Record<string, string>> = {${rows.length ? `\n${rows.join('\n')}\n` : ''}};\n`;
}

const PINS_HEADER = `/**
 * The sha256 of each official release file fakegpu fetches, by its official URL (which names the
 * component, version, architecture and file). Written by \`npm run release-pins\` from the checksums the
 * official hosts publish, over HTTPS; do not edit by hand. A file listed here must hash to its pin from
 * any host; a mirror serves nothing else.
 */
`;

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

/** What decides which files are fetched from where, and what each must hash to. */
export interface FetchOptions {
  /** `FAKEGPU_MIRROR`: absent or empty for the official hosts, `off` for none. */
  mirror?: string | undefined;
  /** Official URL → sha256: the committed table and any the user adds. */
  pins?: Readonly<Record<string, string>>;
  /** `FAKEGPU_MIRROR_ALLOW_HTTP=1`: an `http:` mirror, which anyone on the path may answer for. */
  allowHttp?: boolean;
}

/** The options as the environment gives them: the committed pins, plus `FAKEGPU_RELEASE_PINS`' file. */
export function fetchOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): FetchOptions {
  return {
    mirror: env['FAKEGPU_MIRROR'],
    pins: { ...RELEASE_PINS, ...extraPins(env['FAKEGPU_RELEASE_PINS']) },
    allowHttp: env['FAKEGPU_MIRROR_ALLOW_HTTP'] === '1',
  };
}

function extraPins(file: string | undefined): Record<string, string> {
  if (file === undefined || file === '') return {};
  let o: unknown;
  try {
    o = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new FakegpuError(
      'FAKEGPU_RELEASE_PINS',
      `${file}: ${causeOf(e)}; give a JSON object of URL → sha256`,
    );
  }
  const bad =
    o === null || typeof o !== 'object' || Array.isArray(o)
      ? ['(the file)', o]
      : Object.entries(o).find(
          ([k, v]) => !URL.canParse(k) || typeof v !== 'string' || !/^[0-9a-f]{64}$/.test(v),
        );
  if (bad)
    throw new FakegpuError(
      'FAKEGPU_RELEASE_PINS',
      `${file}: ${JSON.stringify(bad[0])} → ${JSON.stringify(bad[1])} is no URL → sha256 (64 lowercase hex digits)`,
    );
  return o as Record<string, string>;
}

/** The body as text, refused past `max` bytes without reading the rest. */
async function boundedText(res: Response, max: number, url: string): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of Readable.fromWeb(res.body as WebStream<Uint8Array>) as AsyncIterable<Buffer>) {
    n += chunk.length;
    if (n > max) throw new Unavailable(`${url} is over ${String(max / 1024)} KiB, which no checksum file is`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The sha256 `f` must have: its pin, else (official host only) the one its host publishes. */
async function wanted(f: ReleaseFile, file: string, o: FetchOptions): Promise<{ sha: string; from: string }> {
  const pin = o.pins?.[f.url];
  if (pin !== undefined) return { sha: pin, from: "fakegpu's release pins" };
  if (o.mirror !== undefined && o.mirror !== '')
    throw new Unavailable(
      `${file} has no pin in fakegpu's release table, and a mirror serves only pinned files`,
    );
  const sums = await boundedText(await get(f.sums, 15_000), MAX_SUMS_BYTES, f.sums);
  const sha = publishedSha256(sums, file);
  if (sha === null) throw new Unavailable(`${f.sums} gives no sha256 for ${file}`);
  return { sha, from: f.sums };
}

/** Downloads `f` into `dir`, checked against its pin or published sha256; returns the file's path. */
async function fetchChecked(f: ReleaseFile, o: FetchOptions, dir: string): Promise<string> {
  const file = basename(new URL(f.url).pathname);
  const url = mirrored(f.url, o.mirror);
  const path = join(dir, file);
  let want: { sha: string; from: string };
  let got: string;
  // Whatever breaks on the way (a reset, a timeout mid-body) leaves the component to the build; only a
  // file that arrived whole and differs is refused.
  try {
    want = await wanted(f, file, o);
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
  if (got !== want.sha)
    throw new FakegpuError(
      'download',
      `${file} from ${url} has sha256 ${got}, but ${want.from} gives ${want.sha}; refusing it`,
    );
  return path;
}

/** The unpacked size `tar` lists for an archive: refused past the cap before anything is written. */
function unpackedBytes(path: string): number {
  const r = spawnSync('tar', ['-tvzf', path], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error || r.status !== 0)
    throw new Unavailable(`tar could not list ${basename(path)}: ${(r.stderr || String(r.error)).trim()}`);
  let n = 0;
  for (const line of r.stdout.split('\n')) n += Number(/^\S+\s+\S+\s+(\d+)\s/.exec(line)?.[1] ?? 0);
  return n;
}

/** The binaries of `f`, downloaded into `dir`, as name → path there. */
function binariesOf(f: ReleaseFile, path: string, dir: string): Record<string, string> {
  if (f.members === undefined) return { [f.binary ?? basename(path)]: path };
  const size = unpackedBytes(path);
  if (size > MAX_UNPACKED_BYTES)
    throw new FakegpuError(
      'download',
      `${basename(path)} unpacks to ${String(size)} bytes, over the ${String(MAX_UNPACKED_BYTES)} no release of these components comes near; refusing it`,
    );
  const into = join(dir, 'x');
  mkdirSync(into);
  const inside = realpathSync(into) + sep;
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
    // A folder of the member's path may be a link the archive made: the file must be inside all the same.
    const real = realpathSync(p);
    if (!real.startsWith(inside))
      throw new FakegpuError(
        'download',
        `${basename(path)}: ${member} resolves to ${real}, outside the archive; refusing it`,
      );
    out[name] = real;
  }
  return out;
}

/**
 * Fetches one component's release into its folder and stamps it; where it cannot be had, says why in one
 * line. Every binary is in place before the stamp is written, so a crash leaves it to be fetched
 * or built again.
 */
async function fetchComponent(
  repoRoot: string,
  c: Component,
  paths: Toolchain,
  files: ReleaseFile[],
  o: FetchOptions,
  log: (line: string) => void,
): Promise<'fetched' | 'unavailable' | 'host down'> {
  const { out } = placeOf(c, paths);
  mkdirSync(out, { recursive: true });
  return withCacheLock(lockOf(c, paths), `fetching ${placeOf(c, paths).id}`, log, () =>
    // Another process may have fetched or built it while this one waited.
    isCurrent(repoRoot, c, paths)
      ? Promise.resolve('fetched' as const)
      : fetchLocked(c, paths, files, o, log),
  );
}

async function fetchLocked(
  c: Component,
  paths: Toolchain,
  files: ReleaseFile[],
  o: FetchOptions,
  log: (line: string) => void,
): Promise<'fetched' | 'unavailable' | 'host down'> {
  const { id, out } = placeOf(c, paths);
  // What a fetch killed half-way left behind (hundreds of MB for Kubernetes); the lock says none runs.
  for (const f of readdirSync(out))
    if (f.startsWith(`.${id}.fetch-`)) rmSync(join(out, f), { recursive: true, force: true });
  const work = mkdtempSync(join(out, `.${id}.fetch-`));
  const started = Date.now();
  try {
    const got: Record<string, string> = {};
    for (const [i, f] of files.entries()) {
      const dir = join(work, String(i));
      mkdirSync(dir);
      Object.assign(got, binariesOf(f, await fetchChecked(f, o, dir), dir));
    }
    // No stamp while binaries are replaced: a crash in between leaves the component to fetch again.
    rmSync(join(out, `.${id}.stamp`), { force: true });
    for (const [name, path] of Object.entries(got)) {
      chmodSync(path, 0o755);
      renameSync(path, join(out, name));
    }
    stampRelease(c, paths);
    const from = new URL(mirrored(files[0]?.url ?? '', o.mirror)).host;
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
  o: FetchOptions = fetchOptionsFromEnv(),
): Promise<void> {
  const { mirror } = o;
  if (mirror === 'off') return;
  if (mirror !== undefined && mirror !== '') {
    if (!URL.canParse(mirror) || !/^https?:$/.test(new URL(mirror).protocol))
      throw new FakegpuError(
        'FAKEGPU_MIRROR',
        `${JSON.stringify(mirror)} is not a URL; give http(s)://host[:port][/path], or off`,
      );
    if (new URL(mirror).protocol === 'http:' && o.allowHttp !== true)
      throw new FakegpuError(
        'FAKEGPU_MIRROR',
        `${JSON.stringify(mirror)} is plain http, which anyone on the path may answer; give https://, or set FAKEGPU_MIRROR_ALLOW_HTTP=1`,
      );
  }
  const down = new Set<string>();
  for (const { c, paths } of components) {
    const files = releaseFiles(c);
    if (files === null || files.length === 0 || isCurrent(repoRoot, c, paths)) continue;
    const host = new URL(mirrored(files[0]?.url ?? '', mirror)).host;
    if (down.has(host)) continue;
    if ((await fetchComponent(repoRoot, c, paths, files, o, log)) === 'host down') down.add(host);
  }
}
