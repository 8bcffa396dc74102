import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { FakegpuError } from '../errors.js';
import { KWOK_ANNOTATION } from '../k8s/kwok.js';
import { isProfileFile } from '../profile/load.js';
import { cacheRoot, ensureBinaries, type Toolchain } from './build.js';
import {
  featureGatesFlag,
  layout,
  NODE_IP,
  NODE_LINK,
  type Layout,
  PORTS,
  SERVICE_CIDR,
  writeCniConfig,
  writeContainerdConfig,
  writeKubeletConfig,
} from './config.js';
import { ensureImageArchives, PAUSE_IMAGE, TEST_IMAGE } from './image.js';
import { ensureCa, ensureCert, ensureServiceAccountKey, writeKubeconfig } from './pki.js';
import {
  argsOf,
  exeOf,
  forgetPid,
  isAlive,
  pidsMentioning,
  readPid,
  startDaemon,
  startedBy,
  stopTree,
  tail,
  type Started,
} from './process.js';
import { listeningSockets, socketsClosed } from './sockets.js';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Components in start order; `down` stops them in reverse. */
export const COMPONENT_ORDER = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'containerd',
  'kubelet',
  'fakegpu-plugin',
  'kwok',
  'fakegpu-fleet',
] as const;
export type ComponentName = (typeof COMPONENT_ORDER)[number];

export interface ClusterOptions {
  dir: string;
  nodeName: string;
  /** Run fakegpu's node plugin for this machine (preset name or profile file) on the node. */
  profile?: string | undefined;
  dynamicMig?: boolean;
  /** The plugin's `--nic-numa-attribute`: `standard` lets claims matchAttribute NUMA across GPUs and NICs. */
  nicNumaAttribute?: 'dranet' | 'standard';
  /** Simulated nodes: KWOK keeps them Ready and runs their pods, fakegpu's fleet publishes their slices. */
  kwokNodes?: number;
  /** Their machine: a preset (set as each node's profile label) or a profile file (the fleet's default). */
  kwokProfile?: string | undefined;
  /** False: KWOK nodes without fakegpu's fleet, for a fleet the caller runs (a benchmark, its own flags). */
  kwokFleet?: boolean;
  log: (line: string) => void;
}

/** NVIDIA's sharing gates are off by default in the real driver; a demo cluster turns them on. */
export const PLUGIN_FEATURE_GATES = 'TimeSlicingSettings=true,MPSSupport=true';
export const PLUGIN_HTTP = '127.0.0.1:51516';
/** As in the Helm chart: a node label that picks the node's machine, read when the plugin starts. */
export const PROFILE_LABEL = 'fakegpu.dev/profile';
/** The DeviceClass of the fake NICs in deploy/deviceclasses.yaml, exported as FAKEGPU_NIC_CLASS. */
export const NIC_CLASS = 'dranet';

export function defaultClusterDir(): string {
  return process.env['FAKEGPU_CLUSTER_DIR'] ?? join(cacheRoot(), 'cluster');
}

export const DEFAULT_NODE = 'fakegpu-node';

interface State {
  nodeName: string;
  bin: string;
  cniBin: string;
  profile: string | null;
  dynamicMig: boolean;
  nicNumaAttribute?: 'dranet' | 'standard';
  kwokNodes?: number;
  kwokProfile?: string | null;
  /** Absent: true (state files from before the option). */
  kwokFleet?: boolean;
}

function preflight(): void {
  if (process.platform !== 'linux')
    throw new FakegpuError('cluster up', `the local cluster needs Linux; this is ${process.platform}`);
  if (process.getuid?.() !== 0) {
    throw new FakegpuError(
      'cluster up',
      'the local cluster runs a kubelet and containerd, which need root; run it as root (sudo -E npx fakegpu cluster up)',
    );
  }
  const fs = readFileSync('/proc/filesystems', 'utf8');
  if (!/\boverlay\b/.test(fs))
    throw new FakegpuError(
      'cluster up',
      'the kernel has no overlay filesystem (not in /proc/filesystems); containerd needs it (modprobe overlay)',
    );
  const v1 = existsSync('/sys/fs/cgroup/memory') && existsSync('/sys/fs/cgroup/cpu');
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
  if (!v1 && !v2)
    throw new FakegpuError(
      'cluster up',
      'no cgroup hierarchy is mounted under /sys/fs/cgroup; the kubelet needs cgroups (v1 or v2)',
    );
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => {
      resolve(false);
    });
    s.listen(port, '127.0.0.1', () => {
      s.close(() => {
        resolve(true);
      });
    });
  });
}

async function checkPorts(): Promise<void> {
  for (const [name, port] of Object.entries(PORTS)) {
    if (!(await portFree(port))) {
      throw new FakegpuError(
        'cluster up',
        `port ${port} (${name}) on 127.0.0.1 is already in use; stop what holds it (ss -ltnp 'sport = :${port}') or run "fakegpu cluster down"`,
      );
    }
  }
}

function ensureNodeLink(): void {
  if (existsSync(`/sys/class/net/${NODE_LINK}`)) return;
  for (const a of [
    ['link', 'add', NODE_LINK, 'type', 'bridge'],
    ['addr', 'add', `${NODE_IP}/32`, 'dev', NODE_LINK],
    ['link', 'set', NODE_LINK, 'up'],
  ]) {
    const r = spawnSync('ip', a, { encoding: 'utf8' });
    if (r.error || r.status !== 0) {
      throw new FakegpuError(
        'cluster up',
        `cannot create the node's network interface (ip ${a.join(' ')}): ${r.stderr || String(r.error)}; the iproute2 package and root are needed`,
      );
    }
  }
}

function ensurePki(l: Layout, nodeName: string): void {
  ensureCa(l.pki);
  ensureServiceAccountKey(l.pki);
  const local = 'DNS:localhost,IP:127.0.0.1';
  ensureCert(l.pki, {
    file: 'apiserver',
    cn: 'kube-apiserver',
    usage: 'server',
    san: `${local},IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local`,
  });
  ensureCert(l.pki, {
    file: 'apiserver-kubelet-client',
    cn: 'kube-apiserver-kubelet-client',
    org: 'system:masters',
    usage: 'client',
  });
  ensureCert(l.pki, { file: 'admin', cn: 'kubernetes-admin', org: 'system:masters', usage: 'client' });
  ensureCert(l.pki, { file: 'controller-manager', cn: 'system:kube-controller-manager', usage: 'client' });
  ensureCert(l.pki, { file: 'scheduler', cn: 'system:kube-scheduler', usage: 'client' });
  ensureCert(l.pki, {
    file: `kubelet-${nodeName}`,
    cn: `system:node:${nodeName}`,
    org: 'system:nodes',
    usage: 'client',
  });
  ensureCert(l.pki, {
    file: 'kubelet-serving',
    cn: nodeName,
    usage: 'server',
    san: `${local},DNS:${nodeName},IP:${NODE_IP}`,
  });
  const server = `https://127.0.0.1:${PORTS.apiserver}`;
  writeKubeconfig(l.adminKubeconfig, l.pki, server, 'admin', 'admin');
  writeKubeconfig(
    join(l.configDir, 'controller-manager.kubeconfig'),
    l.pki,
    server,
    'controller-manager',
    'controller-manager',
  );
  writeKubeconfig(join(l.configDir, 'scheduler.kubeconfig'), l.pki, server, 'scheduler', 'scheduler');
  writeKubeconfig(
    join(l.configDir, 'kubelet.kubeconfig'),
    l.pki,
    server,
    `system:node:${nodeName}`,
    `kubelet-${nodeName}`,
  );
}

function args(l: Layout, t: Toolchain, name: ComponentName, nodeName: string, kwok = false): string[] {
  const p = (f: string): string => join(l.pki, f);
  const gates = `--feature-gates=${featureGatesFlag()}`;
  switch (name) {
    case 'etcd':
      return [
        '--name=fakegpu',
        `--data-dir=${l.etcdData}`,
        `--listen-client-urls=http://127.0.0.1:${PORTS.etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${PORTS.etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${PORTS.etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${PORTS.etcdPeer}`,
        `--initial-cluster=fakegpu=http://127.0.0.1:${PORTS.etcdPeer}`,
        // A throwaway test cluster: durability is not worth an fsync per write.
        '--unsafe-no-fsync',
        '--listen-metrics-urls=',
      ];
    case 'kube-apiserver':
      return [
        `--etcd-servers=http://127.0.0.1:${PORTS.etcdClient}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${PORTS.apiserver}`,
        `--tls-cert-file=${p('apiserver.crt')}`,
        `--tls-private-key-file=${p('apiserver.key')}`,
        `--client-ca-file=${p('ca.crt')}`,
        `--kubelet-client-certificate=${p('apiserver-kubelet-client.crt')}`,
        `--kubelet-client-key=${p('apiserver-kubelet-client.key')}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${p('sa.pub')}`,
        `--service-account-signing-key-file=${p('sa.key')}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        '--authorization-mode=Node,RBAC',
        '--enable-admission-plugins=NodeRestriction',
        '--allow-privileged=true',
        '--endpoint-reconciler-type=none',
        '--kubelet-preferred-address-types=InternalIP',
        gates,
      ];
    case 'kube-controller-manager': {
      const kc = join(l.configDir, 'controller-manager.kubeconfig');
      return [
        `--kubeconfig=${kc}`,
        `--authentication-kubeconfig=${kc}`,
        `--authorization-kubeconfig=${kc}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${PORTS.controllerManager}`,
        `--service-account-private-key-file=${p('sa.key')}`,
        `--root-ca-file=${p('ca.crt')}`,
        '--use-service-account-credentials=true',
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        '--leader-elect=false',
        // KWOK's nodes refresh their conditions every ten minutes instead of holding leases, which
        // keeps thousands of them nearly free; the node lifecycle controller must wait that long.
        ...(kwok ? ['--node-monitor-grace-period=1h'] : []),
        gates,
      ];
    }
    case 'kube-scheduler': {
      const kc = join(l.configDir, 'scheduler.kubeconfig');
      return [
        `--kubeconfig=${kc}`,
        `--authentication-kubeconfig=${kc}`,
        `--authorization-kubeconfig=${kc}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${PORTS.scheduler}`,
        '--leader-elect=false',
        // Each DRA pod costs two writes (the claim's allocation, the binding): kube-scheduler's default
        // client limit of 50/s would cap a cluster of thousands of simulated nodes at ~25 pods/s.
        ...(kwok ? ['--kube-api-qps=500', '--kube-api-burst=1000'] : []),
        gates,
      ];
    }
    case 'containerd':
      return ['--config', writeContainerdConfig(l, t.bin, t.cniBin, PAUSE_IMAGE)];
    case 'kwok':
      // Stages from deploy/kwok through --config: no CRDs to install.
      return [
        `--kubeconfig=${l.adminKubeconfig}`,
        `--config=${join(REPO_ROOT, 'deploy', 'kwok', 'stages.yaml')}`,
        '--manage-all-nodes=false',
        `--manage-nodes-with-annotation-selector=${KWOK_ANNOTATION}=fake`,
        '--cidr=10.246.0.0/16',
        `--node-ip=${NODE_IP}`,
      ];
    case 'fakegpu-plugin':
    case 'fakegpu-fleet':
      throw new Error(`${name} is started by its own function`);
    case 'kubelet':
      return [
        `--config=${writeKubeletConfig(l)}`,
        `--kubeconfig=${join(l.configDir, 'kubelet.kubeconfig')}`,
        `--root-dir=${l.kubeletRoot}`,
        `--hostname-override=${nodeName}`,
        `--node-ip=${NODE_IP}`,
      ];
  }
}

function httpOk(url: string, tls?: { ca: Buffer; cert: Buffer; key: Buffer } | 'insecure'): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      resolve(ok);
    };
    const onRes = (res: { statusCode?: number; resume: () => void }): void => {
      res.resume();
      done(res.statusCode === 200);
    };
    const req = url.startsWith('https:')
      ? httpsRequest(url, tls === 'insecure' || !tls ? { rejectUnauthorized: false } : { ...tls }, onRes)
      : httpGet(url, onRes);
    req.setTimeout(2000, () => {
      req.destroy();
    });
    req.on('error', () => {
      done(false);
    });
    if (url.startsWith('https:')) req.end();
  });
}

export function kubectl(
  l: Layout,
  bin: string,
  args: string[],
  input?: string,
): { code: number; out: string; err: string } {
  const r = spawnSync(join(bin, 'kubectl'), [`--kubeconfig=${l.adminKubeconfig}`, ...args], {
    encoding: 'utf8',
    input,
    maxBuffer: 256 * 1024 * 1024,
  });
  return { code: r.status ?? 1, out: r.stdout, err: r.stderr };
}

async function waitFor(
  what: string,
  started: Started,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(started.pid)) {
      throw new FakegpuError(
        started.name,
        `exited while starting (${what}); last lines of ${started.log}:\n${tail(started.log)}`,
      );
    }
    if (await check()) return;
    await sleep(250);
  }
  throw new FakegpuError(
    started.name,
    `not ready after ${timeoutMs / 1000}s (${what}); last lines of ${started.log}:\n${tail(started.log)}`,
  );
}

/** One of the cluster's own binaries, with its arguments for this cluster. */
function startComponent(
  l: Layout,
  t: Toolchain,
  s: State,
  name: ComponentName,
  log: (line: string) => void,
): Started {
  log(`starting ${name}`);
  return startDaemon(
    l.run,
    l.logs,
    name,
    join(t.bin, name),
    args(l, t, name, s.nodeName, (s.kwokNodes ?? 0) > 0),
    env(t),
  );
}

function env(t: Toolchain): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${t.bin}:${process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
}

/** Components this cluster runs: the plugin only with a profile. */
function componentsOf(s: State | null): ComponentName[] {
  return COMPONENT_ORDER.filter((n) => {
    if (n === 'fakegpu-plugin') return (s?.profile ?? null) !== null;
    if (n === 'kwok') return (s?.kwokNodes ?? 0) > 0;
    if (n === 'fakegpu-fleet') return (s?.kwokNodes ?? 0) > 0 && s?.kwokFleet !== false;
    return true;
  });
}

function running(l: Layout): Record<ComponentName, number | null> {
  return Object.fromEntries(
    COMPONENT_ORDER.map((n) => {
      const pid = readPid(l.run, n);
      return [n, pid !== null && isAlive(pid) ? pid : null];
    }),
  ) as Record<ComponentName, number | null>;
}

function installDeviceClasses(l: Layout, t: Toolchain): void {
  const classes = kubectl(l, t.bin, ['apply', '-f', join(REPO_ROOT, 'deploy', 'deviceclasses.yaml')]);
  if (classes.code !== 0)
    throw new FakegpuError('cluster up', `installing the DeviceClasses failed: ${classes.err.trim()}`);
}

async function startPlugin(l: Layout, t: Toolchain, s: State, log: (line: string) => void): Promise<void> {
  installDeviceClasses(l, t);
  log(`starting fakegpu-plugin (${s.profile ?? ''}${s.dynamicMig ? ', dynamic MIG' : ''})`);
  const args = [
    join(REPO_ROOT, 'bin', 'fakegpu.js'),
    'plugin',
    `--node-name=${s.nodeName}`,
    `--profile=${s.profile ?? ''}`,
    `--kubelet-plugins-dir=${join(l.kubeletRoot, 'plugins')}`,
    `--kubelet-registrar-dir=${join(l.kubeletRoot, 'plugins_registry')}`,
    `--cdi-root=${l.cdiDir}`,
    `--state-dir=${join(l.dir, 'plugin')}`,
    `--kubeconfig=${l.adminKubeconfig}`,
    `--http-endpoint=${PLUGIN_HTTP}`,
    `--feature-gates=${PLUGIN_FEATURE_GATES}`,
    `--profile-label=${PROFILE_LABEL}`,
    ...(s.dynamicMig ? ['--dynamic-mig'] : []),
    `--nic-numa-attribute=${s.nicNumaAttribute ?? 'dranet'}`,
  ];
  const plugin = startDaemon(l.run, l.logs, 'fakegpu-plugin', process.execPath, args, env(t));
  await waitFor(
    'the kubelet to accept its registration',
    plugin,
    () => httpOk(`http://${PLUGIN_HTTP}/readyz`),
    60_000,
  );
  await waitFor(
    'its ResourceSlices published',
    plugin,
    () => {
      const r = kubectl(l, t.bin, [
        'get',
        'resourceslices',
        `--field-selector=spec.nodeName=${s.nodeName}`,
        '-o',
        'name',
      ]);
      return Promise.resolve(r.code === 0 && r.out.trim() !== '');
    },
    60_000,
  );
}

export const KWOK_DEFAULT_PROFILE = 'dgx-h100';
export const FLEET_HTTP = '127.0.0.1:51517';
/**
 * How the fleet's Node runs, here, in the benchmark and in the chart: its garbage (rendered slices,
 * responses, watch events) dies young, and 1 MiB semi-spaces instead of V8's 16 MiB keep its resident
 * memory near its live data; `gc()` lets it collect once after its first publish (see `Fleet`).
 */
export const FLEET_NODE_FLAGS = ['--max-semi-space-size=1', '--expose-gc'];
/**
 * glibc malloc settings for the fleet: each write's TLS and HTTP buffers come from malloc, and with an
 * arena per thread and its own trim threshold glibc keeps their high-water mark resident for good.
 * Two arenas and a fixed 128 KiB threshold give it back (about a third of the fleet's growth at
 * N=1000 in bench/fleet). Other C libraries ignore them.
 */
export const FLEET_MALLOC_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '131072' } as const;
const KWOK_PREFIX = 'kwok-gpu-';

/** The fleet as a host process, like the plugin: it publishes the KWOK nodes' slices. */
async function startFleet(l: Layout, t: Toolchain, s: State, log: (line: string) => void): Promise<Started> {
  log('starting fakegpu-fleet');
  installDeviceClasses(l, t);
  const profile = s.kwokProfile ?? KWOK_DEFAULT_PROFILE;
  const fleet = startDaemon(
    l.run,
    l.logs,
    'fakegpu-fleet',
    process.execPath,
    [
      ...FLEET_NODE_FLAGS,
      join(REPO_ROOT, 'bin', 'fakegpu.js'),
      'fleet',
      `--kubeconfig=${l.adminKubeconfig}`,
      `--profile=${profile}`,
      `--http-endpoint=${FLEET_HTTP}`,
      ...(s.dynamicMig ? ['--dynamic-mig'] : []),
    ],
    { ...env(t), ...FLEET_MALLOC_ENV },
  );
  await waitFor('its /healthz', fleet, () => httpOk(`http://${FLEET_HTTP}/healthz`), 60_000);
  return fleet;
}

/** The simulated nodes, as KWOK's docs describe them, each labelled with its machine when that is a preset. */
async function createKwokNodes(
  l: Layout,
  t: Toolchain,
  s: State,
  log: (line: string) => void,
  kwok: Started,
): Promise<void> {
  const n = s.kwokNodes ?? 0;
  const profile = s.kwokProfile ?? KWOK_DEFAULT_PROFILE;
  const fleet = s.kwokFleet !== false;
  log(`creating ${n} KWOK node(s) of ${profile}`);
  const labelled = !isProfileFile(profile);
  // A cluster directory keeps its etcd across down and up: nodes of an earlier run are ours to reset
  // (--force-conflicts takes back labels changed since) or, beyond this run's count, to remove.
  const old = kubectl(l, t.bin, ['get', 'nodes', '-l', 'type=kwok', '-o', 'name']).out.split('\n');
  const extra = old.filter((x) => {
    const i = Number(x.slice(`node/${KWOK_PREFIX}`.length));
    return x.startsWith(`node/${KWOK_PREFIX}`) && (!Number.isInteger(i) || i >= n);
  });
  if (extra.length > 0) kubectl(l, t.bin, ['delete', '--wait=false', ...extra]);
  for (let from = 0; from < n; from += 500) {
    const items = Array.from({ length: Math.min(500, n - from) }, (_, k) =>
      kwokNode(from + k, labelled ? profile : null),
    );
    const r = kubectl(
      l,
      t.bin,
      ['apply', '--server-side', '--force-conflicts', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
    );
    if (r.code !== 0) throw new FakegpuError('cluster up', `creating KWOK nodes failed: ${r.err.trim()}`);
  }
  await waitFor(
    fleet ? `${n} KWOK node(s) Ready and their slices published` : `${n} KWOK node(s) Ready`,
    kwok,
    async () => {
      const ready = kubectl(l, t.bin, [
        'get',
        'nodes',
        '-l',
        'type=kwok',
        '-o',
        'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
      ]);
      const count = ready.out.split('\n').filter((x) => x === 'True').length;
      return count === n && (!fleet || (await httpOk(`http://${FLEET_HTTP}/readyz`)));
    },
    Math.max(120_000, n * 200),
  );
}

export function kwokNode(i: number, profile: string | null): unknown {
  const name = `${KWOK_PREFIX}${i}`;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        type: 'kwok',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        ...(profile ? { [PROFILE_LABEL]: profile } : {}),
      },
    },
    spec: { taints: [{ key: KWOK_ANNOTATION, value: 'fake', effect: 'NoSchedule' }] },
    status: {
      allocatable: { cpu: '128', memory: '2Ti', pods: '110' },
      capacity: { cpu: '128', memory: '2Ti', pods: '110' },
    },
  };
}

export interface Exports {
  KUBECONFIG: string;
  PATH: string;
  FAKEGPU_TEST_IMAGE: string;
  FAKEGPU_CLUSTER_DIR: string;
  FAKEGPU_NODE: string;
  FAKEGPU_NIC_CLASS: string;
}

function exportsOf(l: Layout, s: State): Exports {
  return {
    KUBECONFIG: l.adminKubeconfig,
    PATH: `${s.bin}:${process.env['PATH'] ?? ''}`,
    FAKEGPU_TEST_IMAGE: TEST_IMAGE,
    FAKEGPU_CLUSTER_DIR: l.dir,
    FAKEGPU_NODE: s.nodeName,
    FAKEGPU_NIC_CLASS: NIC_CLASS,
  };
}

export function exportLines(e: Exports): string {
  return Object.entries(e)
    .map(([k, v]) => `export ${k}=${JSON.stringify(v)}`)
    .join('\n');
}

function readState(l: Layout): State | null {
  try {
    return JSON.parse(readFileSync(join(l.dir, 'state.json'), 'utf8')) as State;
  } catch {
    return null;
  }
}

/** Starts (or reuses) the local cluster and returns what a shell needs to use it. */
export async function clusterUp(o: ClusterOptions): Promise<Exports> {
  preflight();
  const l = layout(o.dir);
  const state = readState(l);
  const live = running(l);
  const profile = o.profile ?? null;
  const dynamicMig = o.dynamicMig === true;
  const nicNumaAttribute = o.nicNumaAttribute ?? 'dranet';
  if (state && componentsOf(state).every((n) => live[n] !== null)) {
    if (state.nodeName !== o.nodeName) {
      throw new FakegpuError(
        '--node',
        `the cluster in ${l.dir} runs node ${JSON.stringify(state.nodeName)}; run "fakegpu cluster down" first to change it`,
      );
    }
    if (
      state.profile !== profile ||
      state.dynamicMig !== dynamicMig ||
      (profile !== null && (state.nicNumaAttribute ?? 'dranet') !== nicNumaAttribute)
    ) {
      const now =
        state.profile === null
          ? 'no node plugin'
          : `profile ${JSON.stringify(state.profile)}${state.dynamicMig ? ' with dynamic MIG' : ''}${state.nicNumaAttribute === 'standard' ? ' with the standard NUMA attribute on NICs' : ''}`;
      throw new FakegpuError(
        '--profile',
        `the cluster in ${l.dir} runs ${now}; run "fakegpu cluster down" first to change it`,
      );
    }
    if (
      (state.kwokNodes ?? 0) !== (o.kwokNodes ?? 0) ||
      (state.kwokFleet !== false) !== (o.kwokFleet !== false)
    ) {
      throw new FakegpuError(
        '--kwok-nodes',
        `the cluster in ${l.dir} runs ${state.kwokNodes ?? 0} KWOK node(s)${state.kwokFleet === false ? " without fakegpu's fleet" : ''}; run "fakegpu cluster down" first to change it`,
      );
    }
    o.log(`reusing the running cluster in ${l.dir}`);
    return exportsOf(l, state);
  }
  if (COMPONENT_ORDER.some((n) => readPid(l.run, n) !== null)) {
    o.log('found a partly running or crashed cluster; cleaning it up first');
    await clusterDown({ dir: o.dir, purge: false, log: o.log });
  }
  await checkPorts();
  const t = ensureBinaries(REPO_ROOT, o.log);
  const images = ensureImageArchives(join(t.bin, 'pause'), o.log);
  for (const d of [l.run, l.logs, l.configDir, l.cdiDir, l.cniState]) mkdirSync(d, { recursive: true });
  ensurePki(l, o.nodeName);
  writeCniConfig(l);
  ensureNodeLink();
  const s: State = {
    nodeName: o.nodeName,
    bin: t.bin,
    cniBin: t.cniBin,
    profile,
    dynamicMig,
    nicNumaAttribute,
    kwokNodes: o.kwokNodes ?? 0,
    kwokProfile: o.kwokNodes ? (o.kwokProfile ?? profile ?? KWOK_DEFAULT_PROFILE) : null,
    kwokFleet: o.kwokFleet !== false,
  };
  writeFileSync(join(l.dir, 'state.json'), `${JSON.stringify(s, null, 2)}\n`);

  const tls = {
    ca: readFileSync(join(l.pki, 'ca.crt')),
    cert: readFileSync(join(l.pki, 'admin.crt')),
    key: readFileSync(join(l.pki, 'admin.key')),
  };
  const start = (name: ComponentName): Started => startComponent(l, t, s, name, o.log);
  try {
    await waitFor(
      'etcd /health',
      start('etcd'),
      () => httpOk(`http://127.0.0.1:${PORTS.etcdClient}/health`),
      60_000,
    );
    await waitFor(
      '/readyz',
      start('kube-apiserver'),
      () => httpOk(`https://127.0.0.1:${PORTS.apiserver}/readyz`, tls),
      120_000,
    );
    await waitFor(
      '/healthz',
      start('kube-controller-manager'),
      () => httpOk(`https://127.0.0.1:${PORTS.controllerManager}/healthz`, 'insecure'),
      60_000,
    );
    await waitFor(
      '/healthz',
      start('kube-scheduler'),
      () => httpOk(`https://127.0.0.1:${PORTS.scheduler}/healthz`, 'insecure'),
      60_000,
    );
    const containerd = start('containerd');
    const ctr = (a: string[]): ReturnType<typeof spawnSync> =>
      spawnSync(join(t.bin, 'ctr'), ['--address', l.containerdSock, '--namespace', 'k8s.io', ...a], {
        encoding: 'utf8',
      });
    await waitFor('its socket', containerd, () => Promise.resolve(ctr(['version']).status === 0), 60_000);
    for (const archive of [images.pause, images.test]) {
      const r = ctr(['images', 'import', '--local', archive]);
      if (r.status !== 0)
        throw new FakegpuError('containerd', `importing ${archive} failed: ${String(r.stderr).trim()}`);
    }
    const kubelet = start('kubelet');
    await waitFor(
      `node ${o.nodeName} Ready`,
      kubelet,
      () => {
        const r = kubectl(l, t.bin, [
          'get',
          'node',
          o.nodeName,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ]);
        return Promise.resolve(r.code === 0 && r.out.trim() === 'True');
      },
      180_000,
    );
    await waitFor(
      'the default service account',
      kubelet,
      () =>
        Promise.resolve(kubectl(l, t.bin, ['get', 'serviceaccount', 'default', '-n', 'default']).code === 0),
      60_000,
    );
    if (profile !== null) await startPlugin(l, t, s, o.log);
    if ((s.kwokNodes ?? 0) > 0) {
      const kwok = start('kwok');
      if (s.kwokFleet !== false) await startFleet(l, t, s, o.log);
      else installDeviceClasses(l, t);
      await createKwokNodes(l, t, s, o.log, kwok);
    }
  } catch (e) {
    o.log('start failed; stopping what was started');
    // The start's error is the one to report; what down could not stop goes to the log.
    await clusterDown({ dir: o.dir, purge: false, log: o.log }).catch((d: unknown) => {
      o.log(d instanceof Error ? d.message : String(d));
    });
    throw e;
  }
  o.log(`cluster ready: node ${o.nodeName}, logs in ${l.logs}`);
  return exportsOf(l, s);
}

function mountsUnder(dir: string): string[] {
  const lines = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  const points = lines.map((x) => x.split(' ')[4] ?? '').filter((m) => m === dir || m.startsWith(`${dir}/`));
  // Deepest first, so parents unmount after their children.
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

export interface DownOptions {
  dir: string;
  purge: boolean;
  log: (line: string) => void;
}

/** Our process, not an unrelated one that reused the pid of a stale pid file. */
function ours(name: ComponentName, pid: number): boolean {
  const exe = exeOf(pid);
  // Unreadable: trust the pid file.
  if (exe === null) return true;
  if (name === 'fakegpu-plugin' || name === 'fakegpu-fleet') {
    const a = argsOf(pid);
    return a.some((x) => x.endsWith('/bin/fakegpu.js')) && a.includes(name.slice('fakegpu-'.length));
  }
  // A binary rebuilt while it runs reads as deleted.
  return exe.replace(/ \(deleted\)$/, '').endsWith(`/${name}`);
}

/**
 * Stops a process and what it started, then waits until the ports they listened on are closed, so
 * the next `up` or restart finds them free. Returns what is still running or listening.
 */
async function stopAndFree(what: string, pid: number, graceMs = 10_000): Promise<string[]> {
  const sockets = listeningSockets([pid, ...startedBy(pid)]);
  const running = await stopTree(pid, graceMs);
  const open = await socketsClosed(sockets, 10_000);
  return [
    ...running.map((p) => `${what}: pid ${p} still runs after SIGKILL`),
    ...open.map((port) => `${what}: port ${port} still listens after its processes were stopped`),
  ];
}

async function stopComponent(l: Layout, name: ComponentName, log: (line: string) => void): Promise<string[]> {
  const pid = readPid(l.run, name);
  if (pid === null) return [];
  let left: string[] = [];
  if (isAlive(pid) && ours(name, pid)) {
    log(`stopping ${name} (pid ${pid})`);
    left = await stopAndFree(name, pid);
  }
  forgetPid(l.run, name);
  return left;
}

/**
 * Stops every process the cluster started and waits until they have exited and their ports are
 * closed; unmounts what it mounted and removes its bridge.
 */
export async function clusterDown(o: DownOptions): Promise<void> {
  const l = layout(o.dir);
  const state = readState(l);
  const left: string[] = [];
  // The plugin deregisters while the kubelet still runs; then pods go while the runtime still runs, so
  // their shims, mounts and veths go with them.
  for (const name of ['fakegpu-plugin', 'fakegpu-fleet', 'kubelet'] as const)
    left.push(...(await stopComponent(l, name, o.log)));
  const containerdPid = readPid(l.run, 'containerd');
  if (state && containerdPid !== null && isAlive(containerdPid)) {
    spawnSync(
      join(state.bin, 'crictl'),
      ['--runtime-endpoint', `unix://${l.containerdSock}`, 'rmp', '--all', '--force'],
      { encoding: 'utf8', timeout: 60_000 },
    );
  }
  for (const name of [...COMPONENT_ORDER].reverse()) left.push(...(await stopComponent(l, name, o.log)));
  // Shims outlive containerd by design; each takes its containers with it.
  for (const pid of pidsMentioning(l.containerdSock))
    left.push(...(await stopAndFree('containerd shim', pid, 2000)));
  for (const m of mountsUnder(l.dir)) spawnSync('umount', ['-l', m]);
  for (const link of ['fakegpu0', NODE_LINK])
    if (existsSync(`/sys/class/net/${link}`)) spawnSync('ip', ['link', 'delete', link]);
  if (left.length > 0) throw new FakegpuError('cluster down', left.join('; '));
  if (o.purge) {
    rmSync(l.dir, { recursive: true, force: true });
    o.log(`removed ${l.dir}`);
  }
}

export interface ComponentStatus {
  name: ComponentName;
  pid: number | null;
  running: boolean;
  log: string;
}

export function clusterStatus(dir: string): ComponentStatus[] {
  const l = layout(dir);
  const live = running(l);
  return componentsOf(readState(l)).map((name) => ({
    name,
    pid: readPid(l.run, name),
    running: live[name] !== null,
    log: join(l.logs, `${name}.log`),
  }));
}

/** Components `restart` knows how to bring back on their own, leaving everything else running. */
export const RESTARTABLE = [
  'kubelet',
  'fakegpu-plugin',
  'fakegpu-fleet',
  'kwok',
  'kube-scheduler',
  'kube-controller-manager',
] as const;
export type Restartable = (typeof RESTARTABLE)[number];

/**
 * Stops one component and starts it again with the same configuration, as a crash and a supervisor
 * would: pods, claims and the other components are left alone.
 */
export async function clusterRestart(
  dir: string,
  name: Restartable,
  log: (line: string) => void,
): Promise<void> {
  const l = layout(dir);
  const s = readState(l);
  if (!s) throw new FakegpuError('cluster restart', `no cluster in ${dir}; run "fakegpu cluster up" first`);
  if (name === 'fakegpu-plugin' && s.profile === null) {
    throw new FakegpuError(
      'cluster restart',
      'this cluster runs no node plugin (it was started without --profile)',
    );
  }
  const left = await stopComponent(l, name, log);
  if (left.length > 0) throw new FakegpuError('cluster restart', left.join('; '));
  const t: Toolchain = { bin: s.bin, cniBin: s.cniBin };
  if (name === 'fakegpu-plugin') {
    await startPlugin(l, t, s, log);
    return;
  }
  if (name === 'fakegpu-fleet') {
    if ((s.kwokNodes ?? 0) === 0 || s.kwokFleet === false)
      throw new FakegpuError('cluster restart', 'this cluster runs no fleet (no KWOK nodes, or --no-fleet)');
    await startFleet(l, t, s, log);
    return;
  }
  const started = startComponent(l, t, s, name, log);
  // kwok serves no health endpoint here; the nodes it keeps Ready show that it works.
  if (name === 'kwok') return;
  const port =
    name === 'kubelet'
      ? PORTS.kubeletHealthz
      : name === 'kube-scheduler'
        ? PORTS.scheduler
        : PORTS.controllerManager;
  const url = name === 'kubelet' ? `http://127.0.0.1:${port}/healthz` : `https://127.0.0.1:${port}/healthz`;
  await waitFor('/healthz', started, () => httpOk(url, 'insecure'), 60_000);
}
