import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FakegpuError } from '../errors.js';
import { fetchReleases } from './artifacts.js';
import {
  cacheRoot,
  clusterComponents,
  ensureBinaries,
  ensureDebianFile,
  toolchainPaths,
  type Toolchain,
} from './build.js';
import { KUBERNETES_SERVICE, layout, PORTS, writeCniConfig, type Layout } from './config.js';
import { startComponent } from './components.js';
import { installCrds } from './crds.js';
import { ensurePki, etcdClientTls } from './credentials.js';
import { installDeviceClasses, NIC_CLASS } from './deviceclasses.js';
import { startKarpenter } from './karpenter-process.js';
import { startKueue } from './kueue-process.js';
import { clusterDown } from './down.js';
import { FLEET_DCGM, FLEET_HTTP, startFleet } from './fleet-process.js';
import { checkPorts, ensureNodeLink, preflight, reserveOwnPorts } from './host.js';
import { ensureImageArchives, TEST_IMAGE } from './image.js';
import { needsComputeDomains, startComputeDomainController } from './compute-domain-process.js';
import {
  chartFleetReady,
  chartPluginReady,
  fakegpuImageArchive,
  installChart,
  refuseForHelm,
} from './helm-chart.js';
import { kubectl } from './kubectl.js';
import { createKwokNodes, removeKwokNodesBut } from './kwok-nodes.js';
import { extraKwokPidNames, extraKwokStatus, startExtraKwokControllers } from './kwok-controllers.js';
import { kwokControllersOf } from './kwok-partition.js';
import { loadPools } from '../fleet/pools.js';
import { hasNvlinkFabric } from '../model/render.js';
import { PLUGIN_DCGM, startPlugin } from './plugin-process.js';
import { apiserverReady, httpOk, pluginSlicesPublished, waitFor } from './probe.js';
import { readPid, type Started } from './process.js';
import { defaultRelease, type KubernetesRelease } from './releases.js';
import { refuseUntrusted, refuseUntrustedToolchain } from './trust.js';
import { REPO_ROOT } from '../process/repo.js';
import type { GpuOffer } from '../tools/karpenter/gpu-offer.js';
import {
  COMPONENT_ORDER,
  componentsOf,
  freshEtcdFor,
  modeOf,
  KWOK_DEFAULT_PROFILE,
  readState,
  releaseOfState,
  kwokRuns,
  running,
  writeState,
  type Integration,
  type ComponentName,
  type State,
} from './state.js';

export interface ClusterOptions {
  dir: string;
  nodeName: string;
  /** The Kubernetes release to build and run (releases.ts); absent: the default. */
  release?: KubernetesRelease | undefined;
  /** Run fakegpu's node plugin for this machine (preset name or profile file) on the node. */
  profile?: string | undefined;
  dynamicMig?: boolean;
  /** The plugin's `--nic-numa-attribute`: `standard` lets claims matchAttribute NUMA across GPUs and NICs. */
  nicNumaAttribute?: 'dranet' | 'standard';
  /** False: the node plugin publishes no NIC slices. */
  nics?: boolean;
  /** NVIDIA driver gates for the plugin, beside the sharing gates the cluster always turns on. */
  pluginGates?: string | undefined;
  /** `--consumable-shares` for the plugin and the fleet (checked against the gates); absent: disabled. */
  consumableShares?: string | undefined;
  /** The plugin serves the kubelet's DRAResourceHealth. */
  healthService?: boolean;
  /** Simulated nodes: KWOK keeps them Ready and runs their pods, fakegpu's fleet publishes their slices. */
  kwokNodes?: number;
  /** KWOK controllers the nodes are split between (kwok-partition.ts); absent: one. */
  kwokControllers?: number;
  /** Their machine: a preset (set as each node's profile label) or a profile file (the fleet's default). */
  kwokProfile?: string | undefined;
  /** A FleetPools file whose pools list their nodes (`fakegpu capture cluster` writes one); absolute. */
  kwokPools?: string | undefined;
  /** Upstream projects to build and run beside the cluster: Karpenter's KWOK provider, Kueue. */
  with?: Integration[];
  /** How Karpenter's nodes offer their GPUs (instance-types.ts); absent: `dra`. */
  karpenterGpus?: GpuOffer;
  /** False: KWOK nodes without fakegpu's fleet, for a fleet the caller runs (a benchmark, its own flags). */
  kwokFleet?: boolean;
  /** Fleet replicas, sharding the KWOK nodes; default 1. */
  fleetReplicas?: number;
  /** The API server keeps an audit log of every ResourceSlice write (`logs/audit.log`): who wrote which node when. */
  auditSlices?: boolean;
  /** fakegpu from its Helm chart and image instead of host processes (helm-chart.ts). */
  helm?: boolean;
  log: (line: string) => void;
}

export interface Exports {
  KUBECONFIG: string;
  PATH: string;
  FAKEGPU_TEST_IMAGE: string;
  FAKEGPU_CLUSTER_DIR: string;
  FAKEGPU_NODE: string;
  FAKEGPU_NIC_CLASS: string;
  /** The node plugin's GPU metrics, as dcgm-exporter serves them. */
  FAKEGPU_DCGM_URL?: string;
  /** The fleet's, for every KWOK node it serves. */
  FAKEGPU_FLEET_DCGM_URL?: string;
  /** The fleet's page: its nodes' GPUs by state and the scorecard, live. */
  FAKEGPU_FLEET_UI?: string;
}

function exportsOf(l: Layout, s: State): Exports {
  return {
    KUBECONFIG: l.adminKubeconfig,
    PATH: `${s.bin}:${process.env['PATH'] ?? ''}`,
    FAKEGPU_TEST_IMAGE: TEST_IMAGE,
    FAKEGPU_CLUSTER_DIR: l.dir,
    FAKEGPU_NODE: s.nodeName,
    FAKEGPU_NIC_CLASS: NIC_CLASS,
    ...(s.profile && !s.helm ? { FAKEGPU_DCGM_URL: `http://${PLUGIN_DCGM}/metrics` } : {}),
    ...(kwokRuns(s) && s.kwokFleet !== false && !s.helm
      ? {
          FAKEGPU_FLEET_DCGM_URL: `http://${FLEET_DCGM}/metrics`,
          FAKEGPU_FLEET_UI: `http://${FLEET_HTTP}/ui`,
        }
      : {}),
  };
}

export function exportLines(e: Exports): string {
  return Object.entries(e)
    .map(([k, v]) => `export ${k}=${JSON.stringify(v)}`)
    .join('\n');
}

/** A running cluster is reused only as it was started: another node or machine needs a `down` first. */
function refuseChanges(dir: string, state: State, o: ClusterOptions): void {
  const profile = o.profile ?? null;
  const dynamicMig = o.dynamicMig === true;
  const nicNumaAttribute = o.nicNumaAttribute ?? 'dranet';
  const runs = releaseOfState(state).version;
  if (runs !== (o.release ?? defaultRelease()).version) {
    throw new FakegpuError(
      '--kubernetes-version',
      `the cluster in ${dir} runs Kubernetes ${runs}; run "fakegpu cluster down" first to change it`,
    );
  }
  if (state.nodeName !== o.nodeName) {
    throw new FakegpuError(
      '--node-name',
      `the cluster in ${dir} runs node ${JSON.stringify(state.nodeName)}; run "fakegpu cluster down" first to change it`,
    );
  }
  if (state.profile === profile && state.dynamicMig !== dynamicMig) {
    throw new FakegpuError(
      '--dynamic-mig',
      `the cluster in ${dir} runs ${state.dynamicMig ? 'with' : 'without'} dynamic MIG; run "fakegpu cluster down" first to change it`,
    );
  }
  if (
    state.profile !== profile ||
    state.dynamicMig !== dynamicMig ||
    (profile !== null &&
      ((state.nicNumaAttribute ?? 'dranet') !== nicNumaAttribute ||
        (state.nics ?? true) !== (o.nics ?? true) ||
        (state.pluginGates ?? '') !== (o.pluginGates ?? '') ||
        (state.consumableShares ?? 'disabled') !== (o.consumableShares ?? 'disabled') ||
        (state.healthService ?? false) !== (o.healthService ?? false)))
  ) {
    const now =
      state.profile === null
        ? 'no node plugin'
        : `profile ${JSON.stringify(state.profile)}${state.dynamicMig ? ' with dynamic MIG' : ''}${state.nicNumaAttribute === 'standard' ? ' with the standard NUMA attribute on NICs' : ''}${state.nics === false ? ' without NICs' : ''}${state.pluginGates ? ` with feature gates ${state.pluginGates}` : ''}${state.consumableShares ? ` with consumable shares ${state.consumableShares}` : ''}${state.healthService ? ' with the health service' : ''}`;
    throw new FakegpuError(
      '--profile',
      `the cluster in ${dir} runs ${now}; run "fakegpu cluster down" first to change it`,
    );
  }
  if (
    (state.kwokNodes ?? 0) !== (o.kwokNodes ?? 0) ||
    kwokControllersOf(state) !== kwokControllersOf(o) ||
    (state.kwokFleet !== false) !== (o.kwokFleet !== false) ||
    (state.fleetReplicas ?? 1) !== (o.fleetReplicas ?? 1) ||
    (state.auditSlices ?? false) !== (o.auditSlices ?? false) ||
    (state.kwokPools ?? null) !== (o.kwokPools ?? null)
  ) {
    throw new FakegpuError(
      '--kwok-nodes',
      `the cluster in ${dir} runs ${state.kwokNodes ?? 0} KWOK node(s)${kwokControllersOf(state) > 1 ? ` under ${kwokControllersOf(state)} KWOK controllers` : ''}${state.kwokPools ? ` of the pools in ${state.kwokPools}` : ''}${state.kwokFleet === false ? " without fakegpu's fleet" : ''}${(state.fleetReplicas ?? 1) > 1 ? ` served by ${String(state.fleetReplicas)} fleet replicas` : ''}${state.auditSlices ? ', its slice writes audited' : ''}; run "fakegpu cluster down" first to change it`,
    );
  }
  if ((state.helm ?? false) !== (o.helm ?? false))
    throw new FakegpuError(
      '--helm',
      `the cluster in ${dir} runs fakegpu ${state.helm ? 'from its Helm chart' : 'as host processes'}; run "fakegpu cluster down" first to change it`,
    );
  const have = (state.with ?? []).join(',');
  if (have !== [...(o.with ?? [])].sort().join(','))
    throw new FakegpuError(
      '--with',
      `the cluster in ${dir} runs ${have === '' ? 'no --with project' : `with ${have}`}; run "fakegpu cluster down" first to change it`,
    );
}

/** Starts (or reuses) the local cluster and returns what a shell needs to use it. */
export async function clusterUp(o: ClusterOptions): Promise<Exports> {
  preflight();
  refuseUntrusted('--dir', o.dir, 'give a --dir that root owns');
  refuseUntrusted(
    'cache',
    cacheRoot(),
    "unset FAKEGPU_CACHE for root's own cache, or point it at a folder root owns",
  );
  if (o.helm)
    refuseForHelm({
      release: o.release ?? defaultRelease(),
      profile: o.profile ?? null,
      kwokProfile: o.kwokProfile ?? null,
      kwokPools: o.kwokPools,
    });
  const l = layout(o.dir);
  const reused = reuseRunning(l, o);
  if (reused !== null) return reused;
  if (COMPONENT_ORDER.some((n) => readPid(l.run, n) !== null) || extraKwokPidNames(l).length > 0) {
    o.log('found a partly running or crashed cluster; cleaning it up first');
    await clusterDown({ dir: o.dir, purge: false, log: o.log });
  }
  await checkPorts(o.helm === true);
  const { t, images, s } = await prepare(l, o);
  try {
    await startComponents(l, t, s, images, o.log);
  } catch (e) {
    o.log('start failed; stopping what was started');
    // The start's error is the one to report; what down could not stop goes to the log.
    await clusterDown({ dir: o.dir, purge: false, log: o.log }).catch((d: unknown) => {
      o.log(d instanceof Error ? d.message : String(d));
    });
    throw e;
  }
  o.log(`cluster ready: node ${o.nodeName}, logs in ${l.logs}`);
  const e = exportsOf(l, s);
  if (e.FAKEGPU_FLEET_UI) o.log(`the fleet's page, its nodes' GPUs and the scorecard: ${e.FAKEGPU_FLEET_UI}`);
  return e;
}

/** The cluster as a previous `up` started it, if all of it still runs. */
function reuseRunning(l: Layout, o: ClusterOptions): Exports | null {
  const state = readState(l);
  const live = running(l);
  if (!state || !componentsOf(state).every((n) => live[n] !== null)) return null;
  if (!extraKwokStatus(l, state).every((c) => c.running)) return null;
  refuseChanges(l.dir, state, o);
  refuseUntrustedToolchain({ bin: state.bin, cniBin: state.cniBin });
  o.log(`reusing the running cluster in ${l.dir}`);
  installCrds(l, state.bin);
  return exportsOf(l, state);
}

type ImageArchives = ReturnType<typeof ensureImageArchives>;

/**
 * Binaries fetched or built and images built, the host's directories, certificates and configs written, and
 * state.json.
 */
async function prepare(
  l: Layout,
  o: ClusterOptions,
): Promise<{ t: Toolchain; images: ImageArchives; s: State }> {
  const release = o.release ?? defaultRelease();
  const s = stateOf(o, release, toolchainPaths(release));
  const needs = { helm: s.helm === true, kwok: kwokRuns(s) };
  await fetchReleases(REPO_ROOT, clusterComponents(release, needs), o.log);
  const t = await ensureBinaries(REPO_ROOT, o.log, release, needs);
  refuseUntrustedToolchain(t);
  const images = ensureImageArchives(join(t.bin, 'pause'), o.log);
  for (const d of [l.run, l.logs, l.configDir, l.cdiDir, l.cniState]) mkdirSync(d, { recursive: true });
  ensurePki(l, o.nodeName);
  writeCniConfig(l);
  ensureNodeLink();
  reserveOwnPorts(o.log);
  if (s.helm) ensureDebianFile({ header: '/usr/sbin/nft', debian: 'nftables' }, o.log);
  if (computeDomainsNeeded(s)) s.computeDomains = true;
  const previous = readState(l);
  if (freshEtcdFor(previous, s)) {
    o.log(
      `starting from empty etcd data: it may hold what fakegpu made running otherwise than ${modeOf(s)} (state.json: etcdOf ${previous?.etcdOf ?? 'not recorded'}, helm ${String(previous?.helm ?? false)})`,
    );
    rmSync(l.etcdData, { recursive: true, force: true });
  }
  writeState(l, s);
  return { t, images, s };
}

/** state.json: how `down`, `restart`, `status` and a later `up` know what this `up` started. */
function stateOf(o: ClusterOptions, release: KubernetesRelease, t: Toolchain): State {
  const profile = o.profile ?? null;
  return {
    nodeName: o.nodeName,
    kubernetes: release.version,
    bin: t.bin,
    cniBin: t.cniBin,
    profile,
    dynamicMig: o.dynamicMig === true,
    nicNumaAttribute: o.nicNumaAttribute ?? 'dranet',
    ...(o.nics === false ? { nics: false } : {}),
    ...(o.pluginGates ? { pluginGates: o.pluginGates } : {}),
    ...(o.consumableShares && o.consumableShares !== 'disabled'
      ? { consumableShares: o.consumableShares }
      : {}),
    ...(o.healthService ? { healthService: true } : {}),
    kwokNodes: o.kwokNodes ?? 0,
    ...(kwokControllersOf(o) > 1 ? { kwokControllers: kwokControllersOf(o) } : {}),
    kwokProfile: o.kwokNodes ? (o.kwokProfile ?? profile ?? KWOK_DEFAULT_PROFILE) : null,
    kwokFleet: o.kwokFleet !== false,
    ...((o.fleetReplicas ?? 1) > 1 ? { fleetReplicas: o.fleetReplicas } : {}),
    ...(o.auditSlices ? { auditSlices: true } : {}),
    ...(o.kwokPools ? { kwokPools: o.kwokPools } : {}),
    ...(o.with?.length ? { with: [...o.with].sort() } : {}),
    ...(o.with?.includes('karpenter') ? { karpenterGpus: o.karpenterGpus ?? 'dra' } : {}),
    ...(o.helm ? { helm: true } : {}),
    etcdOf: o.helm ? 'helm' : 'host-processes',
  };
}

/**
 * A machine with an NVLink fabric, on the node or among the KWOK nodes,
 * needs the ComputeDomain controller.
 */
function computeDomainsNeeded(s: State): boolean {
  const byProfile = needsComputeDomains([s.profile, s.kwokNodes && !s.kwokPools ? s.kwokProfile : null]);
  // The pools are read even when a profile already decided, so a bad pools file is refused either way.
  const byPools =
    !!s.kwokPools &&
    [...loadPools(s.kwokPools, '--kwok-pools').byName.values()].some((m) => hasNvlinkFabric(m.profile));
  return byProfile || byPools;
}

/** What each phase of the start needs: the cluster's paths, binaries and state, and a component's start. */
interface Starting {
  l: Layout;
  t: Toolchain;
  s: State;
  start: (name: ComponentName) => Started;
  log: (line: string) => void;
}

/**
 * Each component is waited for before the next: the API server needs etcd, the controllers the API
 * server, pods a Ready node.
 */
async function startComponents(
  l: Layout,
  t: Toolchain,
  s: State,
  images: ImageArchives,
  log: (line: string) => void,
): Promise<void> {
  const c: Starting = { l, t, s, start: (name) => startComponent(l, t, s, name, log), log };
  await startControlPlane(c);
  await startNode(c, images);
  if (s.helm) await startChart(c);
  else await startHostProcesses(c);
  // Without KWOK nodes of its own, this run still removes those an earlier one left (createKwokNodes does with).
  if ((s.kwokNodes ?? 0) === 0) removeKwokNodesBut(l, t, new Set());
  if (s.with?.includes('karpenter')) await startKarpenter(l, t, s, log);
  if (s.with?.includes('kueue')) await startKueue(l, t, log);
}

async function startControlPlane({ l, t, start }: Starting): Promise<void> {
  await waitFor(
    'etcd /health',
    start('etcd'),
    () => httpOk(`https://127.0.0.1:${PORTS.etcdClient}/health`, etcdClientTls(l)),
    60_000,
  );
  await waitFor('/readyz', start('kube-apiserver'), apiserverReady(l), 120_000);
  installCrds(l, t.bin);
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
}

/** The images are imported into containerd because the node has no registry to pull them from. */
async function startNode({ l, t, s, start, log }: Starting, images: ImageArchives): Promise<void> {
  const containerd = start('containerd');
  const ctr = (a: string[]): ReturnType<typeof spawnSync> =>
    spawnSync(join(t.bin, 'ctr'), ['--address', l.containerdSock, '--namespace', 'k8s.io', ...a], {
      encoding: 'utf8',
    });
  await waitFor('its socket', containerd, () => Promise.resolve(ctr(['version']).status === 0), 60_000);
  // With --helm, fakegpu's own image too: the chart's pods run it (built from this checkout).
  const fakegpu = s.helm ? [fakegpuImageArchive(log)] : [];
  for (const archive of [images.pause, images.test, images.daemon, ...fakegpu]) {
    const r = ctr(['images', 'import', '--local', archive]);
    if (r.status !== 0)
      throw new FakegpuError('containerd', `importing ${archive} failed: ${String(r.stderr).trim()}`);
  }
  const kubelet = start('kubelet');
  await waitFor(
    `node ${s.nodeName} Ready`,
    kubelet,
    () => {
      const r = kubectl(l, t.bin, [
        'get',
        'node',
        s.nodeName,
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
}

/** Without --helm: fakegpu's controller, node plugin and fleet as processes on this host, and KWOK. */
async function startHostProcesses({ l, t, s, start, log }: Starting): Promise<void> {
  if (s.computeDomains) await startComputeDomainController(l, t, s, log);
  if (s.profile !== null) await startPlugin(l, t, s, log);
  if (kwokRuns(s)) {
    const kwok = start('kwok');
    startExtraKwokControllers(l, t, s, log);
    if (s.kwokFleet !== false) await startFleet(l, t, s, log);
    else installDeviceClasses(l, t);
    if ((s.kwokNodes ?? 0) > 0) await createKwokNodes(l, t, s, log, kwok);
  }
}

/**
 * With --helm: kube-proxy, so pods reach the API server through the `kubernetes` Service; KWOK; then the
 * chart (its image is already in containerd), and the KWOK nodes once its fleet runs.
 */
async function startChart({ l, t, s, start, log }: Starting): Promise<void> {
  const proxy = start('kube-proxy');
  await waitFor(
    `the kubernetes Service at ${KUBERNETES_SERVICE}`,
    proxy,
    apiserverReady(l, KUBERNETES_SERVICE),
    60_000,
  );
  const kwok = kwokRuns(s) ? start('kwok') : null;
  if (kwok) startExtraKwokControllers(l, t, s, log);
  installChart(l, t, s, REPO_ROOT, log);
  if (s.profile !== null) {
    await waitFor('the plugin pod Ready', proxy, chartPluginReady(l, t, s.nodeName), 120_000);
    await waitFor(
      "the plugin pod's ResourceSlices published",
      proxy,
      pluginSlicesPublished(l, t, s.nodeName),
      60_000,
    );
  }
  if (kwok && (s.kwokNodes ?? 0) > 0)
    await createKwokNodes(
      l,
      t,
      s,
      log,
      kwok,
      // The chart's fleet is asked through the API server, which says ready or not, not how far.
      () => Promise.resolve({ ready: chartFleetReady(l, t, s.fleetReplicas ?? 1), published: null }),
    );
}
