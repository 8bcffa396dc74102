import { duration, timedProgress, type Log } from '../process/progress.js';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { FakegpuError } from '../errors.js';
import { withCacheLock } from './cache-lock.js';
import { defaultRelease, KUBERNETES_RELEASES, type KubernetesRelease } from './releases.js';

/**
 * Versions of the upstream components; the Go modules under upstream/ pin the same ones. Kubernetes is the
 * default release's; the others are in releases.ts.
 */
export const VERSIONS = {
  kubernetes: defaultRelease().version,
  etcd: '3.7.3',
  containerd: '2.4.2',
  runc: '1.5.3',
  cni: '1.10.0',
  crictl: '1.37.0',
  pause: '1.0.0',
  helm: '3.22.0',
  kwok: '0.8.0',
  prometheus: '3.16.0',
  karpenter: '1.15.0',
  kueue: '0.17.0',
} as const;

export interface Component {
  /** Folder under upstream/ holding its go.mod, unless `folder` says otherwise. */
  module: keyof typeof VERSIONS;
  folder?: string;
  /** Its version in messages, when not VERSIONS[module]. */
  version?: string;
  /** `GOTOOLCHAIN` for a go.mod newer than the machine's Go; absent: `local`. */
  goToolchain?: string;
  /** Go package → binary name. */
  binaries: Record<string, string>;
  /** Sub-folder of the cache's bin/ (CNI plugins live apart, as containerd expects). */
  dir?: string;
  ldflags?: string;
  tags?: string[];
  cgo?: boolean;
  /** A C header the build needs, and the Debian package that provides it. */
  needs?: { header: string; debian: string };
  /** Built only when asked for (`ensureComponent`), not with the cluster. */
  onDemand?: boolean;
  /** Its stamp's name, where a second component builds from the same module (kube-proxy). */
  stamp?: string;
}

/** Installs a file (a build dependency, a tool) from Debian's archive when we are root on Debian; otherwise says what to install. */
export function ensureDebianFile(
  needs: { header: string; debian: string },
  log: (line: string) => void,
): void {
  if (existsSync(needs.header)) return;
  const canInstall = process.getuid?.() === 0 && existsSync('/usr/bin/apt-get');
  if (canInstall) {
    log(`installing ${needs.debian} (provides ${needs.header})`);
    let r = spawnSync('apt-get', ['install', '-y', '-qq', needs.debian], {
      encoding: 'utf8',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (r.status !== 0) {
      spawnSync('apt-get', ['update', '-qq'], { encoding: 'utf8' });
      r = spawnSync('apt-get', ['install', '-y', '-qq', needs.debian], {
        encoding: 'utf8',
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
    }
    if (r.status === 0 && existsSync(needs.header)) return;
  }
  throw new FakegpuError(
    'build',
    `${needs.header} is missing; install the ${needs.debian} package (apt-get install ${needs.debian}) and retry`,
  );
}

function k8sVersionFlags(v: string): string {
  const [major, minor] = v.split('.');
  return ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']
    .map(
      (p) =>
        `-X ${p}.gitVersion=v${v} -X ${p}.gitMajor=${major} -X ${p}.gitMinor=${minor} -X ${p}.gitTreeState=clean`,
    )
    .join(' ');
}

/**
 * Kubernetes itself, one release. The default release's recipe is what it always was (same folder, same
 * JSON), so a cache built before releases existed stays valid.
 */
export function kubernetesComponent(r: KubernetesRelease): Component {
  const isDefault = r.version === defaultRelease().version;
  return {
    module: 'kubernetes',
    binaries: Object.fromEntries(
      ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kubectl'].map((c) => [
        `k8s.io/kubernetes/cmd/${c}`,
        c,
      ]),
    ),
    ldflags: k8sVersionFlags(r.version),
    ...(isDefault ? {} : { folder: r.folder, version: r.version }),
    ...(r.goToolchain ? { goToolchain: r.goToolchain } : {}),
  };
}

/**
 * kube-proxy, built only for `cluster up --helm`: the chart's pods reach the API server as every
 * in-cluster client does, through the `kubernetes` Service's cluster IP, which needs a proxy. Its module
 * (`upstream/kube-proxy`) pins the default release, with the modules kube-proxy needs beyond the others.
 */
export function kubeProxyComponent(): Component {
  return {
    ...kubernetesComponent(defaultRelease()),
    folder: 'kube-proxy',
    binaries: { 'k8s.io/kubernetes/cmd/kube-proxy': 'kube-proxy' },
    stamp: 'kube-proxy',
    onDemand: true,
  };
}

export const COMPONENTS: readonly Component[] = [
  kubernetesComponent(defaultRelease()),
  { module: 'etcd', binaries: { 'go.etcd.io/etcd/server/v3': 'etcd' } },
  {
    module: 'containerd',
    binaries: {
      'github.com/containerd/containerd/v2/cmd/containerd': 'containerd',
      'github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2': 'containerd-shim-runc-v2',
      'github.com/containerd/containerd/v2/cmd/ctr': 'ctr',
    },
    ldflags: `-X github.com/containerd/containerd/v2/version.Version=v${VERSIONS.containerd}`,
    // btrfs support needs kernel headers at build time; overlayfs is what we use.
    tags: ['no_btrfs'],
  },
  // runc's nsenter is C, so it needs cgo; seccomp needs libseccomp, because containerd gives every pod
  // sandbox the runtime's default seccomp profile.
  {
    module: 'runc',
    binaries: { 'github.com/opencontainers/runc': 'runc' },
    ldflags: `-X main.version=${VERSIONS.runc}`,
    cgo: true,
    tags: ['seccomp'],
    needs: { header: '/usr/include/seccomp.h', debian: 'libseccomp-dev' },
  },
  {
    module: 'cni',
    dir: 'cni',
    binaries: {
      'github.com/containernetworking/plugins/plugins/main/bridge': 'bridge',
      'github.com/containernetworking/plugins/plugins/main/loopback': 'loopback',
      'github.com/containernetworking/plugins/plugins/ipam/host-local': 'host-local',
    },
  },
  { module: 'crictl', binaries: { 'sigs.k8s.io/cri-tools/cmd/crictl': 'crictl' } },
  { module: 'pause', binaries: { 'fakegpu.dev/cluster/pause': 'pause' } },
  // Simulated nodes (`cluster up --kwok-nodes`): keeps them Ready and runs their pods' lifecycle.
  {
    module: 'kwok',
    binaries: { 'sigs.k8s.io/kwok/cmd/kwok': 'kwok' },
    ldflags: `-X sigs.k8s.io/kwok/pkg/consts.Version=${VERSIONS.kwok}`,
  },
  // Only for checking the chart in deploy/helm; the local cluster itself does not use it.
  {
    module: 'helm',
    binaries: { 'helm.sh/helm/v3/cmd/helm': 'helm' },
    ldflags: `-X helm.sh/helm/v3/internal/version.version=v${VERSIONS.helm}`,
  },
  // A real Prometheus scraping the GPU metrics in the end-to-end tests; without cloud and Kubernetes
  // service discovery (static targets only), which halves its build.
  {
    module: 'prometheus',
    binaries: {
      'github.com/prometheus/prometheus/cmd/prometheus': 'prometheus',
      'github.com/prometheus/prometheus/cmd/promtool': 'promtool',
    },
    ldflags: `-X github.com/prometheus/common/version.Version=${VERSIONS.prometheus}`,
    tags: ['remove_all_sd'],
    onDemand: true,
  },
  // Karpenter's KWOK provider, for an autoscaler in the local cluster (`cluster up --with karpenter`), as
  // upstream/karpenter/main.go wires it: the provider's own, plus each instance type's DRA templates.
  {
    module: 'karpenter',
    binaries: { 'fakegpu.dev/cluster/karpenter': 'karpenter-kwok' },
    goToolchain: 'go1.26.9',
    onDemand: true,
  },
  // Kueue, for a batch queue in the local cluster (`cluster up --with kueue`).
  {
    module: 'kueue',
    binaries: { 'sigs.k8s.io/kueue/cmd/kueue': 'kueue' },
    ldflags: `-X sigs.k8s.io/kueue/pkg/version.GitVersion=v${VERSIONS.kueue}`,
    onDemand: true,
  },
];

export interface Toolchain {
  /** Binaries: kube-*, kubelet, kubectl, etcd, containerd*, ctr, runc, crictl. */
  bin: string;
  /** CNI plugins. */
  cniBin: string;
}

const folderOf = (repoRoot: string, c: Component): string => join(repoRoot, 'upstream', c.folder ?? c.module);

function recipe(repoRoot: string, c: Component): string {
  const dir = folderOf(repoRoot, c);
  const h = createHash('sha256');
  // go.sum is absent for a module without dependencies (the pause program); Go files are ours (pause,
  // Karpenter's main), so each is part of what is built.
  const own = readdirSync(dir)
    .filter((f) => f.endsWith('.go'))
    .sort();
  for (const f of ['go.mod', 'go.sum', ...own])
    if (existsSync(join(dir, f))) h.update(readFileSync(join(dir, f)));
  h.update(JSON.stringify({ ...c, go: goVersion() }));
  return h.digest('hex').slice(0, 16);
}

let cachedGo: string | undefined;
function goVersion(): string {
  if (cachedGo) return cachedGo;
  const r = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new FakegpuError(
      'go',
      'the Go toolchain is needed to build the cluster binaries and was not found on PATH; install Go >= 1.26 (https://go.dev/dl) and retry',
    );
  }
  cachedGo = r.stdout.trim();
  return cachedGo;
}

/**
 * `$FAKEGPU_CACHE`, else `$XDG_CACHE_HOME/fakegpu`, else `~/.cache/fakegpu`: outside the checkout, so clones
 * share it. As root, without `$FAKEGPU_CACHE`, root's own `~/.cache/fakegpu` (its home from the password
 * database): `sudo -E` keeps the invoking user's `$HOME` and `$XDG_CACHE_HOME`, and a cache there is one
 * that user could fill with binaries for root to run (trust.ts refuses any that is not root's alone).
 */
export function cacheRoot(): string {
  const explicit = process.env['FAKEGPU_CACHE'];
  if (explicit !== undefined) return explicit;
  if (process.geteuid?.() === 0) return join(userInfo().homedir, '.cache', 'fakegpu');
  return join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'fakegpu');
}

/**
 * The binaries of one release: `k8s-v<version>/bin`. The default release's folder also holds every other
 * component (etcd, containerd, …), built once and linked into the other releases' folders.
 */
export function toolchainPaths(release: KubernetesRelease = defaultRelease()): Toolchain {
  const base = join(cacheRoot(), `k8s-v${release.version}`);
  return { bin: join(base, 'bin'), cniBin: join(base, 'cni', 'bin') };
}

/**
 * Builds every missing or outdated binary of the cluster from the pinned Go modules, printing progress to
 * stderr. A component is rebuilt only when its go.mod, go.sum, build recipe or the Go version changed.
 */
export async function ensureBinaries(
  repoRoot: string,
  log: Log,
  release: KubernetesRelease = defaultRelease(),
  needs: ClusterNeeds = {},
): Promise<Toolchain> {
  const shared = toolchainPaths();
  const own = toolchainPaths(release);
  const all = clusterComponents(release, needs);
  for (const [i, { c, paths }] of all.entries())
    await build(repoRoot, c, paths, `[${i + 1}/${all.length}]`, log);
  if (own.bin !== shared.bin)
    linkShared(
      all.filter(({ c }) => c.module !== 'kubernetes').map(({ c }) => c),
      shared,
      own,
    );
  return own;
}

/** What a cluster runs beyond its core: kube-proxy for the chart, KWOK for simulated nodes (default on). */
export interface ClusterNeeds {
  helm?: boolean;
  kwok?: boolean;
}

/** Each component a cluster of `release` runs, with the folders it goes to. */
export function clusterComponents(
  release: KubernetesRelease = defaultRelease(),
  needs: ClusterNeeds = {},
): { c: Component; paths: Toolchain }[] {
  const shared = toolchainPaths();
  const core = COMPONENTS.filter(
    (c) => c.onDemand !== true && c.module !== 'kubernetes' && (c.module !== 'kwok' || needs.kwok !== false),
  );
  return [
    { c: kubernetesComponent(release), paths: toolchainPaths(release) },
    ...core.map((c) => ({ c, paths: shared })),
    ...(needs.helm === true ? [{ c: kubeProxyComponent(), paths: shared }] : []),
  ];
}

/** Every component at every version some cluster may run: what `npm run release-pins` pins. */
export function releaseComponents(): Component[] {
  return [
    ...KUBERNETES_RELEASES.filter((r) => !r.unavailable).map(kubernetesComponent),
    kubeProxyComponent(),
    ...COMPONENTS.filter((c) => c.module !== 'kubernetes'),
  ];
}

/** The version a component is built at. */
export const componentVersion = (c: Component): string => c.version ?? VERSIONS[c.module];

/** Its stamp's name and the folder its binaries go to. */
export function placeOf(c: Component, paths: Toolchain): { id: string; out: string } {
  return { id: c.stamp ?? c.module, out: c.dir === 'cni' ? paths.cniBin : paths.bin };
}

/**
 * The stamp of binaries fetched from the component's official release (artifacts.ts) rather than built:
 * they stay current until its version changes, whatever the Go version or recipe here.
 */
export const releaseStamp = (c: Component): string => `release ${componentVersion(c)}`;

/** Whether the component's binaries are there and current, fetched or built; false where Go is missing. */
export function isCurrent(repoRoot: string, c: Component, paths: Toolchain): boolean {
  const { id, out } = placeOf(c, paths);
  const stamp = join(out, `.${id}.stamp`);
  if (!Object.values(c.binaries).every((n) => existsSync(join(out, n))) || !existsSync(stamp)) return false;
  const have = readFileSync(stamp, 'utf8').trim();
  if (have === releaseStamp(c)) return true;
  try {
    return have === recipe(repoRoot, c);
  } catch {
    return false;
  }
}

/** Records binaries just fetched from the official release as current. */
export function stampRelease(c: Component, paths: Toolchain): void {
  const { id, out } = placeOf(c, paths);
  writeFileSync(join(out, `.${id}.stamp`), `${releaseStamp(c)}\n`);
}

/** The shared components in a release's own folders, as links: one build of etcd serves every release. */
function linkShared(others: readonly Component[], shared: Toolchain, own: Toolchain): void {
  for (const c of others) {
    const [from, to] = c.dir === 'cni' ? [shared.cniBin, own.cniBin] : [shared.bin, own.bin];
    mkdirSync(to, { recursive: true });
    for (const name of Object.values(c.binaries)) {
      const link = join(to, name);
      // A link left by a cache in another place would dangle: always point it at this cache's build.
      rmSync(link, { force: true });
      symlinkSync(join(from, name), link);
    }
  }
}

/** One component built on demand (Prometheus), into the same bin/ as the cluster's. */
export async function ensureComponent(
  repoRoot: string,
  module: keyof typeof VERSIONS,
  log: Log,
): Promise<Toolchain> {
  const paths = toolchainPaths();
  const c = COMPONENTS.find((x) => x.module === module);
  if (!c) throw new FakegpuError('build', `no component ${module}`);
  await build(repoRoot, c, paths, '', log);
  return paths;
}

/**
 * Where the Go module cache holds an upstream module a component pins (its CRDs and manifests live there):
 * `go list -m` in the component's folder, after `ensureComponent` has downloaded it.
 */
export function moduleDir(repoRoot: string, module: keyof typeof VERSIONS, path: string): string {
  const c = COMPONENTS.find((x) => x.module === module);
  if (!c) throw new FakegpuError('build', `no component ${module}`);
  const r = spawnSync('go', ['list', '-m', '-f', '{{.Dir}}', path], {
    cwd: folderOf(repoRoot, c),
    env: { ...process.env, GOTOOLCHAIN: c.goToolchain ?? 'local', GOFLAGS: '-mod=readonly' },
    encoding: 'utf8',
  });
  const dir = r.stdout.trim();
  if (r.status !== 0 || dir === '')
    throw new FakegpuError(
      'build',
      `go list -m ${path} in upstream/${c.folder ?? c.module}: ${r.stderr.trim()}`,
    );
  return dir;
}

/** One `go build`, its standard error kept to its last 16 kB for the error line. */
function goBuild(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stderr: string; error?: Error }> {
  return new Promise((resolve) => {
    const child = spawn('go', args, { cwd, env, stdio: ['ignore', 'inherit', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-16_384);
    });
    child.on('error', (error) => {
      resolve({ code: null, stderr, error });
    });
    child.on('close', (code) => {
      resolve({ code, stderr });
    });
  });
}

/** The lock of a component's folder in the cache (cache-lock.ts): one builder or fetcher at a time. */
export function lockOf(c: Component, paths: Toolchain): string {
  const { id, out } = placeOf(c, paths);
  return join(out, `.${id}.lock`);
}

async function build(
  repoRoot: string,
  c: Component,
  paths: Toolchain,
  step: string,
  log: Log,
): Promise<void> {
  const { id, out } = placeOf(c, paths);
  if (isCurrent(repoRoot, c, paths)) return;
  mkdirSync(out, { recursive: true });
  await withCacheLock(lockOf(c, paths), `building ${id}`, log, async () => {
    // Another process may have built it while this one waited.
    if (!isCurrent(repoRoot, c, paths)) await buildLocked(repoRoot, c, paths, step, log);
  });
}

async function buildLocked(
  repoRoot: string,
  c: Component,
  paths: Toolchain,
  step: string,
  log: Log,
): Promise<void> {
  const { id, out } = placeOf(c, paths);
  const stamp = join(out, `.${id}.stamp`);
  const want = recipe(repoRoot, c);
  const names = Object.values(c.binaries);
  if (c.needs) ensureDebianFile(c.needs, log);
  const started = Date.now();
  // How long the last build of it took here: a version bump rebuilds it about as long.
  const took = join(out, `.${id}.took`);
  const last = existsSync(took) ? Number(readFileSync(took, 'utf8').trim()) : NaN;
  log(
    `building ${id} ${componentVersion(c)} (${names.join(', ')})${step ? ` ${step}` : ''}; ${Number.isFinite(last) ? `the last build here took ${duration(last)}` : 'a first build takes minutes'}`,
  );
  // What a killed build left (its pid's temporary files): the lock says no other build runs.
  for (const f of readdirSync(out))
    if (names.some((n) => f.startsWith(`.${n}.tmp`))) rmSync(join(out, f), { force: true });
  const progress = timedProgress(`building ${id}`, last, log);
  try {
    for (const [pkg, name] of Object.entries(c.binaries)) {
      // Private to this process: a killed build's file is never another's to rename.
      const tmp = join(out, `.${name}.tmp-${String(process.pid)}`);
      const args = ['build', '-trimpath', '-ldflags', `-s -w ${c.ldflags ?? ''}`.trim(), '-o', tmp];
      if (c.tags) args.push('-tags', c.tags.join(','));
      args.push(pkg);
      const r = await goBuild(args, folderOf(repoRoot, c), {
        ...process.env,
        CGO_ENABLED: c.cgo ? '1' : '0',
        GOTOOLCHAIN: c.goToolchain ?? 'local',
        GOFLAGS: '-mod=readonly',
      });
      if (r.code !== 0) {
        const tail = (r.stderr || String(r.error ?? '')).trim().split('\n').slice(-15).join('\n');
        throw new FakegpuError(
          `build ${name}`,
          `go build ${pkg} failed in upstream/${c.folder ?? c.module}:\n${tail}`,
        );
      }
      renameSync(tmp, join(out, name));
    }
  } finally {
    progress.stop();
  }
  writeFileSync(stamp, `${want}\n`);
  const seconds = Math.round((Date.now() - started) / 1000);
  writeFileSync(took, `${seconds}\n`);
  log(`built ${id} in ${duration(seconds)}`);
}
