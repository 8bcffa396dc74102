import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import { Registry } from 'prom-client';
import { KubeApi } from '../../kube/api.js';
import { clientOf, loadKubeconfigInto } from '../../kube/client.js';
import { serveProbes, type ProbeServer } from '../../process/probe-server.js';
import { CheckpointStore } from '../checkpoint/checkpoint.js';
import type { FeatureGates } from '../../model/feature-gates/gates.js';
import type { ConsumableShares } from '../../model/device/consumable-shares.js';
import { RELEASES, type DriverRelease } from '../../model/device/release.js';
import { KubeFaultApi } from '../../kube/gpufault/api.js';
import { gpuSkeleton } from '../../model/health/gpus.js';
import { ignoredXids } from '../../model/health/taints.js';
import type { Machine } from '../../model/hardware/machine.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
import type { Semver } from '../../kube/types/version.js';
import { refuseServed, socketPaths, startServers, type RunningServers } from '../kubelet/grpc.js';
import type { HealthSource } from '../kubelet/health.js';
import { NicState } from '../nic/prepare.js';
import { nicStatusWriter } from '../nic/status.js';
import { KubeClaimStatus } from '../../kube/claim-status.js';
import type { ResourceClaim } from '../../kube/types/claim.js';
import { FileMigStateStore } from '../nvml/state-file.js';
import type { ResolvedProfile } from '../../model/profile/load.js';
import type { ClaimLifecycle } from '../prepare/lifecycle.js';
import { apiLookup, sweepStaleClaims, type StaleSweeper } from './stale-claims.js';
import { PassthroughState } from '../prepare/passthrough-state.js';
import { withoutSiblings } from '../../model/device/vfio.js';
import { withoutFields, type GatedField } from '../../kube/publish/gates.js';
import type { Publisher } from '../../kube/publish/publisher.js';
import {
  modelNode,
  renderComputeDomainSlices,
  renderNicSlices,
  type NicRenderOptions,
  type NodeModel,
} from '../../model/render.js';
import { withoutPartitions } from '../../model/device/allocatable.js';
import { buildSlices } from '../../model/slice/build.js';
import { draHandlers } from './handlers.js';
import { COMPUTE_DOMAIN_DRIVER } from '../../model/compute-domain/slice.js';
import { computeDomainNode, type ComputeDomainNodeOptions } from './compute-domains.js';
import { chooseProfile, slicesFromFile } from './machine.js';
import { NodeFaults } from './faults.js';
import { NodeHealth } from './health.js';
import { pluginMetrics } from './metrics.js';
import { NodeScorecard } from './scorecard.js';
import { scorecardGauges } from '../../process/scorecard-metrics.js';
import type { Scorecard } from '../../model/scorecard/score.js';
import { startNodeDcgm } from './dcgm.js';
import type { Style } from '../../model/dcgm/exposition.js';
import { refuseRealDriver } from './preflight.js';
import { publishSlices } from './publish.js';

export interface PluginOptions {
  nodeName: string;
  profile: ResolvedProfile;
  /** A node label whose value, when present on this node, names the profile instead (Helm's per-node choice). */
  profileLabel?: string | undefined;
  dynamicMig: boolean;
  driverName: string;
  driverVersion?: string | undefined;
  release: DriverRelease;
  kubeletPluginsDir: string;
  kubeletRegistrarDir: string;
  cdiRoot: string;
  stateDir: string;
  slicesFile?: string | undefined;
  kubeconfig?: string | undefined;
  httpEndpoint: string;
  /** dcgm-exporter's endpoint (host:port); absent: no GPU metrics. */
  dcgmEndpoint?: string | undefined;
  /** Which dcgm-exporter the metrics look like. */
  dcgmStyle?: Style | undefined;
  gates: FeatureGates;
  /** `--consumable-shares`, checked against the gates; absent: disabled. */
  consumableShares?: ConsumableShares | undefined;
  /** With the gate NVMLDeviceHealthCheck: XIDs tainted with effect None. */
  ignoredXids?: ReadonlySet<number> | undefined;
  /** Serve the kubelet's DRAResourceHealth (KEP-4680) from the health monitor. */
  healthService?: boolean | undefined;
  resetCheckpoint: boolean;
  /** Where to look for NVIDIA's real device nodes before starting (default /dev). */
  devRoot?: string | undefined;
  /** DRANET's NICs beside the GPUs; absent: GPUs only. */
  nics?: (NicRenderOptions & { stateDir: string }) | undefined;
  /** NVIDIA's compute-domain.nvidia.com beside the GPUs, on a machine with NVLink fabric; absent: off. */
  computeDomains?: ComputeDomainNodeOptions | undefined;
  log?: Logger;
}

export interface RunningPlugin {
  stop(): Promise<void>;
}

/** One driver on this node: its claims, its kubelet sockets, and later its slices. */
export interface Driver {
  name: string;
  state: ClaimLifecycle;
  checkpoint: CheckpointStore;
  /** The slices to publish, once the API server's version is known. */
  /** `off`: fields the API server drops (their gate off), left out of what is published. */
  slices(version: Semver, off: ReadonlySet<GatedField>): ResourceSlice[];
  /** Subscribes to changes of the slices (a device tainted); returns the unsubscribe. */
  changes?: (listener: () => void) => () => void;
  /** Device health for the kubelet, when the driver serves it. */
  health?: HealthSource | undefined;
  /** Told the slices the pool equals after each publish. */
  published?: (slices: readonly ResourceSlice[]) => void;
  /** Told of each claim it prepared (DRANET's claim status). */
  prepared?: (claim: ResourceClaim) => void;
}

type Metrics = ReturnType<typeof pluginMetrics>;

/**
 * Before the checkpoint is touched: a second plugin on the node would otherwise roll back and sweep what
 * the live one is in the middle of.
 */
async function refuseSecondPlugin(o: PluginOptions): Promise<void> {
  for (const driverName of [
    o.driverName,
    ...(o.nics ? [o.nics.driverName] : []),
    ...(o.computeDomains ? [COMPUTE_DOMAIN_DRIVER] : []),
  ]) {
    const paths = socketPaths({
      driverName,
      pluginsDir: o.kubeletPluginsDir,
      registrarDir: o.kubeletRegistrarDir,
    });
    await refuseServed(paths.draSocket);
    await refuseServed(paths.registrationSocket);
  }
}

/** The node's model, and the NVML state file its MIG state was read from. */
function nodeModel(
  o: PluginOptions,
  profile: ResolvedProfile,
): { model: NodeModel; nvmlState: () => FileMigStateStore | undefined } {
  let store: FileMigStateStore | undefined;
  const model = modelNode(profile, {
    nodeName: o.nodeName,
    dynamicMig: o.dynamicMig,
    driverVersion: o.driverVersion,
    driverName: o.driverName,
    kubernetesVersion: { major: 1, minor: 37, patch: 0 } satisfies Semver,
    release: o.release,
    gates: o.gates,
    consumableShares: o.consumableShares,
    // One state file per machine: a node relabelled to another preset, and back, keeps each one's MIG state.
    migState: (machine) =>
      (store = new FileMigStateStore(
        join(o.stateDir, `nvml-state-${machineKey(machine)}.json`),
        o.resetCheckpoint,
      )),
  });
  return { model, nvmlState: () => store };
}

/**
 * NVML's state set aside for the profile's (`--reset-checkpoint` over a damaged file) took the dynamic
 * MIG devices with it, and a claim could hold one: every prepared claim is forgotten, as a reset
 * checkpoint's are, and the restore's sweep takes their files. A checkpoint reset the other way needs
 * nothing here: the sweep removes the MIG instances no claim holds.
 */
function forgetClaimsIfNvmlReset(
  nvml: FileMigStateStore | undefined,
  checkpoint: CheckpointStore,
  log: Logger,
): void {
  if (!nvml?.resetFrom) return;
  const claims = checkpoint.all().map(([uid]) => uid);
  for (const uid of claims) checkpoint.delete(uid);
  checkpoint.flush();
  log.warn(
    { nvmlState: nvml.path, why: nvml.resetFrom, forgotten: claims },
    'started with the profile’s NVML state and no prepared claims (--reset-checkpoint)',
  );
}

/** NVIDIA's GPU driver: its claims, slices, health and (unless the slices come from a file) faults. */
function gpuDriver(
  o: PluginOptions,
  node: ReturnType<typeof nodeModel>,
  health: NodeHealth,
  kc: KubeConfig,
  log: Logger,
): { driver: Driver; checkpoint: CheckpointStore; faults: NodeFaults | null } {
  const { model } = node;
  const checkpoint = new CheckpointStore(join(o.stateDir, 'checkpoint.json'), o.resetCheckpoint);
  forgetClaimsIfNvmlReset(node.nvmlState(), checkpoint, log);
  const gpuState = new PassthroughState(model.machine, model.nvml, model.devices, checkpoint, {
    driverName: o.driverName,
    nodeName: o.nodeName,
    cdiRoot: o.cdiRoot,
    stateDir: o.stateDir,
    gates: o.gates,
    release: o.release,
    consumableShares: o.consumableShares,
    resetCheckpoint: o.resetCheckpoint,
  });
  // Slices replayed from a file have no hardware behind them to break.
  const faults = o.slicesFile
    ? null
    : new NodeFaults({
        nodeName: o.nodeName,
        api: new KubeFaultApi(kc),
        nodeLabels: async () => (await new KubeApi(kc).readNode(o.nodeName)).metadata?.labels ?? {},
        nvml: model.nvml,
        gpus: gpuSkeleton(model.machine, model.devices).gpus(o.nodeName),
        health,
        refreshFiles: () => gpuState.refreshFiles(),
        release: o.release,
        log,
      });
  const slices = (version: Semver, off: ReadonlySet<GatedField>): ResourceSlice[] => {
    if (o.slicesFile) return slicesFromFile(o.slicesFile, o.nodeName, o.driverName);
    const noCounters = off.has('sharedCounters') || off.has('consumesCounters');
    const devices = o.gates.PassthroughSupport
      ? withoutSiblings(health.devices(), gpuState.preparedDevices())
      : health.devices();
    const built = buildSlices(noCounters ? withoutPartitions(devices) : devices, {
      nodeName: o.nodeName,
      driverName: o.driverName,
      dynamicMig: o.dynamicMig && !noCounters,
      kubernetesVersion: version,
      release: o.release,
    });
    return withoutFields(built, off);
  };
  const driver: Driver = {
    name: o.driverName,
    checkpoint,
    state: gpuState,
    slices,
    changes: (listener) => {
      // Only NVIDIA's sibling rule makes a prepare change the slice.
      const off = [health.subscribe(listener)];
      if (o.gates.PassthroughSupport) off.push(gpuState.subscribe(listener));
      return () => {
        for (const f of off) f();
      };
    },
    health: o.healthService
      ? {
          current: () => health.reports().map((r) => ({ poolName: o.nodeName, ...r })),
          subscribe: (listener) => health.subscribe(listener),
        }
      : undefined,
    published: (published) => faults?.published(published),
  };
  return { driver, checkpoint, faults };
}

/**
 * DRANET's side, when the machine has NICs to publish: a second driver on the same node with its own
 * sockets, slices, checkpoint and state dir.
 */
function nicDriver(o: PluginOptions, model: NodeModel, kc: KubeConfig, log: Logger): Driver | null {
  const nicSlices = o.nics ? renderNicSlices(model.machine, o.nics) : [];
  if (!o.nics || nicSlices.length === 0) return null;
  const nicCheckpoint = new CheckpointStore(join(o.nics.stateDir, 'checkpoint.json'), o.resetCheckpoint);
  return {
    name: o.nics.driverName,
    checkpoint: nicCheckpoint,
    state: new NicState(model.machine.nics, nicCheckpoint, {
      driverName: o.nics.driverName,
      nodeName: o.nodeName,
      cdiRoot: o.cdiRoot,
      stateDir: o.nics.stateDir,
    }),
    slices: () => nicSlices,
    prepared: nicPrepared(model.machine, o.nics.driverName, o.nodeName, kc, log),
  };
}

/** DRANET's claim status, written after each prepare and never awaited (`node/nic/status.ts`). */
function nicPrepared(
  machine: Machine,
  driverName: string,
  nodeName: string,
  kc: KubeConfig,
  log: Logger,
): (claim: ResourceClaim) => void {
  const write = nicStatusWriter(machine.nics, {
    driverName,
    nodeName,
    machineNode: machine.nodeName,
    api: new KubeClaimStatus(kc),
    log,
  });
  return (claim) => void write(claim);
}

/** Before serving: finish or undo what a crash left, and sweep what no claim holds. */
function restoreDrivers(drivers: readonly Driver[], m: Metrics, log: Logger): void {
  for (const d of drivers) {
    if (d.checkpoint.resetFrom !== null)
      log.warn(
        { driver: d.name, checkpoint: d.checkpoint.path, why: d.checkpoint.resetFrom },
        'started with an empty checkpoint (--reset-checkpoint)',
      );
    const r = d.state.restore();
    if (r.stale.length > 0)
      log.warn(
        { driver: d.name, claims: r.stale },
        'prepared claims refer to devices this machine no longer has',
      );
    if (r.rolledBack.length > 0)
      log.warn({ driver: d.name, claims: r.rolledBack }, 'rolled back half-prepared claims');
    const swept = r.swept.cdiSpecs + r.swept.views + r.swept.instances;
    if (swept > 0) log.warn({ driver: d.name, ...r.swept }, 'swept what no prepared claim holds');
    m.swept.inc({ driver: d.name, kind: 'rolled_back' }, r.rolledBack.length);
    m.swept.inc({ driver: d.name, kind: 'cdi_spec' }, r.swept.cdiSpecs);
    m.swept.inc({ driver: d.name, kind: 'view' }, r.swept.views);
    m.swept.inc({ driver: d.name, kind: 'mig_instance' }, r.swept.instances);
  }
}

/** Claims the API server no longer has, unprepared at start and every so often (stale-claims.ts). */
function releaseStale(drivers: readonly Driver[], kc: KubeConfig, m: Metrics, log: Logger): StaleSweeper {
  return sweepStaleClaims(drivers, apiLookup(clientOf(kc)), {
    log,
    onPass: (p) => {
      for (const r of p.released) m.swept.inc({ driver: r.driver, kind: 'stale_claim' });
      if (p.released.length > 0) m.prepared.set(drivers.reduce((n, d) => n + d.state.held().length, 0));
    },
  });
}

/**
 * Each driver's kubelet sockets. `registered` follows the kubelet's answer per driver: before it accepted
 * a registration, prepare calls cannot reach us.
 */
async function serveKubelet(
  o: PluginOptions,
  drivers: readonly Driver[],
  registered: Map<string, boolean>,
  deps: { kc: KubeConfig; m: Metrics; log: Logger },
): Promise<RunningServers[]> {
  const { m, log } = deps;
  const claims = clientOf(deps.kc);
  const preparedCount = (): number => drivers.reduce((n, d) => n + d.state.held().length, 0);
  m.prepared.set(preparedCount());
  const servers: RunningServers[] = [];
  for (const d of drivers) {
    registered.set(d.name, false);
    const s = await startServers(
      {
        driverName: d.name,
        pluginsDir: o.kubeletPluginsDir,
        registrarDir: o.kubeletRegistrarDir,
        health: d.health,
        onRegistration: (ok: boolean, error?: string) => {
          registered.set(d.name, ok);
          if (ok) log.info({ driver: d.name }, 'registered with the kubelet');
          else log.error({ driver: d.name, error }, 'the kubelet refused the registration');
        },
      },
      draHandlers(d.state, { driver: d.name, claims, metrics: m, log, preparedCount, prepared: d.prepared }),
    );
    servers.push(s);
    log.info({ driver: d.name, dra: s.draSocket, registration: s.registrationSocket }, 'serving the kubelet');
  }
  return servers;
}

export async function runPlugin(o: PluginOptions): Promise<RunningPlugin> {
  const log = o.log ?? pino({ name: 'fakegpu-plugin', base: { node: o.nodeName, driver: o.driverName } });
  refuseRealDriver(o.devRoot);
  await refuseSecondPlugin(o);
  const kc = loadKubeconfigInto(new KubeConfig(), o.kubeconfig);
  const reg = new Registry();
  const m = pluginMetrics(reg);
  let scorecard: () => Scorecard | null = () => null;
  scorecardGauges(reg, () => scorecard());
  // Ready once the kubelet accepted every registration.
  const registered = new Map<string, boolean>();
  const probes = o.httpEndpoint
    ? await serveProbes({
        endpoint: o.httpEndpoint,
        ready: () => [...registered.values()].every(Boolean),
        notReady: 'not registered with the kubelet',
        metrics: reg,
        log: log,
      })
    : null;
  try {
    return await startPlugin(o, {
      kc,
      m,
      log,
      registered,
      probes,
      scorecard: (read) => {
        scorecard = read;
      },
    });
  } catch (e) {
    await probes?.close();
    throw e;
  }
}

async function startPlugin(
  o: PluginOptions,
  c: {
    kc: KubeConfig;
    m: Metrics;
    log: Logger;
    registered: Map<string, boolean>;
    probes: ProbeServer | null;
    /** Where the node's scorecard is read from, once its drivers exist. */
    scorecard?: (read: () => Scorecard | null) => void;
  },
): Promise<RunningPlugin> {
  const { kc, m, log } = c;
  const node = nodeModel(o, await chooseProfile(o, kc, log));
  const { model } = node;
  const health = new NodeHealth(model.nvml, model.devices, {
    enabled: o.gates.NVMLDeviceHealthCheck,
    release: o.release,
    ignoredXids: o.ignoredXids ?? ignoredXids(''),
    log,
  });
  const gpu = gpuDriver(o, node, health, kc, log);
  const nics = nicDriver(o, model, kc, log);
  // NVIDIA's compute-domain driver, where the GPUs are in an NVLink fabric: a third driver.
  const domainSlices = o.computeDomains ? renderComputeDomainSlices(model.machine) : [];
  const domains =
    o.computeDomains && domainSlices.length > 0
      ? computeDomainNode(model.nvml, {
          ...o.computeDomains,
          slices: domainSlices,
          nodeName: o.nodeName,
          kc,
          cdiRoot: o.cdiRoot,
          kubeletPluginsDir: o.kubeletPluginsDir,
          checkDomainID: RELEASES[o.release].domainIDChecks,
          resetCheckpoint: o.resetCheckpoint,
          log,
        })
      : null;
  const drivers = [gpu.driver, ...(nics ? [nics] : []), ...(domains ? [domains.driver] : [])];
  restoreDrivers(drivers, m, log);
  const servers = await serveKubelet(o, drivers, c.registered, { kc, m, log });
  const stale = releaseStale(drivers, kc, m, log);
  if (gpu.faults) void gpu.faults.startWithHealth();
  else health.start();

  const publishers: Publisher[] = [];
  const stopping = new AbortController();
  const scorecard = new NodeScorecard(o.nodeName, o.driverName, () =>
    drivers.map((d) => ({ driver: d.name, claims: d.checkpoint.all() })),
  );
  c.scorecard?.(() => scorecard.scorecard());
  const publishing = publishSlices({
    kc,
    nodeName: o.nodeName,
    drivers,
    metrics: m,
    log,
    retireComputeDomains: o.computeDomains !== undefined && !domains,
    publishers,
    signal: stopping.signal,
    onPublished: (driver, slices) => {
      scorecard.published(driver, slices);
    },
  }).then(async (done) => {
    if (done) await domains?.start();
  });
  c.probes?.started();
  const dcgm = o.dcgmEndpoint
    ? await startNodeDcgm({
        endpoint: o.dcgmEndpoint,
        style: o.dcgmStyle,
        nodeName: o.nodeName,
        driverName: o.driverName,
        machine: model.machine,
        nvml: model.nvml,
        checkpoint: gpu.checkpoint,
        kc,
        log,
      })
    : null;

  return {
    async stop() {
      stopping.abort();
      await stale.stop();
      await publishing;
      await gpu.faults?.stop();
      await domains?.stop();
      await health.stop();
      await dcgm?.stop();
      for (const p of publishers) p.stop();
      for (const s of servers) await s.stop();
      await c.probes?.close();
    },
  };
}

/** Short stable name for a machine: its GPUs' UUIDs, which already encode node, bus IDs and models. */
function machineKey(m: Machine): string {
  return createHash('sha256')
    .update(m.gpus.map((g) => g.uuid).join(','))
    .digest('hex')
    .slice(0, 12);
}
