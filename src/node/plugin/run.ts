import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import { Registry } from 'prom-client';
import { KubeApi } from '../../kube/api.js';
import { fullJitter, PUBLISH_BACKOFF } from '../../kube/backoff.js';
import { clientOf, serverVersion } from '../../kube/client.js';
import { splitEndpoint } from '../../process/endpoint.js';
import { CheckpointStore } from '../checkpoint/checkpoint.js';
import type { FeatureGates } from '../../model/opaque-config/nvidia.js';
import type { DriverRelease } from '../../model/device/release.js';
import { KubeFaultApi } from '../../kube/gpufault/api.js';
import { gpuSkeleton } from '../../model/health/gpus.js';
import { ignoredXids } from '../../model/health/taints.js';
import type { Machine } from '../../model/hardware/machine.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
import { formatSemver, type Semver } from '../../kube/types/version.js';
import { refuseServed, socketPaths, startServers, type RunningServers } from '../kubelet/grpc.js';
import type { HealthSource } from '../kubelet/health.js';
import { NicState } from '../nic/prepare.js';
import { FileMigStateStore } from '../nvml/state-file.js';
import type { ResolvedProfile } from '../../model/profile/load.js';
import type { ClaimLifecycle } from '../prepare/lifecycle.js';
import { DeviceState } from '../prepare/state.js';
import { gateMessage, probeGates, withoutFields, type GatedField } from '../../kube/publish/gates.js';
import { Publisher } from '../../kube/publish/publisher.js';
import { modelNode, renderNicSlices, type NicRenderOptions } from '../../model/render.js';
import { withoutPartitions } from '../../model/device/allocatable.js';
import { buildSlices } from '../../model/slice/build.js';
import { draHandlers } from './handlers.js';
import { COMPUTE_DOMAIN_DRIVER } from '../../model/compute-domain/slice.js';
import { computeDomainNode, type ComputeDomainNodeOptions } from './compute-domains.js';
import { chooseProfile, slicesFromFile } from './machine.js';
import { NodeFaults } from './faults.js';
import { NodeHealth } from './health.js';
import { pluginMetrics } from './metrics.js';
import { startNodeDcgm } from './dcgm.js';
import type { Style } from '../../model/dcgm/exposition.js';
import { refuseRealDriver } from './preflight.js';

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

/** A driver's slices before the API server is probed: every gated field in. */
const NOTHING_DROPPED: ReadonlySet<GatedField> = new Set();

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
}

export async function runPlugin(o: PluginOptions): Promise<RunningPlugin> {
  const log = o.log ?? pino({ name: 'fakegpu-plugin', base: { node: o.nodeName, driver: o.driverName } });
  refuseRealDriver(o.devRoot);
  // Before the checkpoint is touched: a second plugin on the node would otherwise roll back and sweep
  // what the live one is in the middle of.
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
  const kc = new KubeConfig();
  if (o.kubeconfig) kc.loadFromFile(o.kubeconfig);
  else kc.loadFromDefault();
  const claims = clientOf(kc);

  const profile = await chooseProfile(o, kc, log);
  const model = modelNode(profile, {
    nodeName: o.nodeName,
    dynamicMig: o.dynamicMig,
    driverVersion: o.driverVersion,
    driverName: o.driverName,
    kubernetesVersion: { major: 1, minor: 37, patch: 0 } satisfies Semver,
    release: o.release,
    // One state file per machine: a node relabelled to another preset, and back, keeps each one's MIG state.
    migState: (machine) => new FileMigStateStore(join(o.stateDir, `nvml-state-${machineKey(machine)}.json`)),
  });

  const health = new NodeHealth(model.nvml, model.devices, {
    enabled: o.gates.NVMLDeviceHealthCheck === true,
    release: o.release,
    ignoredXids: o.ignoredXids ?? ignoredXids(''),
    log,
  });
  const reg = new Registry();
  const m = pluginMetrics(reg);
  const drivers: Driver[] = [];
  const checkpoint = new CheckpointStore(join(o.stateDir, 'checkpoint.json'), o.resetCheckpoint);
  const gpuState = new DeviceState(model.machine, model.nvml, model.devices, checkpoint, {
    driverName: o.driverName,
    nodeName: o.nodeName,
    cdiRoot: o.cdiRoot,
    stateDir: o.stateDir,
    gates: o.gates,
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
  drivers.push({
    name: o.driverName,
    checkpoint,
    state: gpuState,
    slices: (version, off) => {
      if (o.slicesFile) return slicesFromFile(o.slicesFile, o.nodeName, o.driverName);
      const noCounters = off.has('sharedCounters') || off.has('consumesCounters');
      const slices = buildSlices(noCounters ? withoutPartitions(health.devices()) : health.devices(), {
        nodeName: o.nodeName,
        driverName: o.driverName,
        dynamicMig: o.dynamicMig && !noCounters,
        kubernetesVersion: version,
        release: o.release,
      });
      return withoutFields(slices, off);
    },
    changes: (listener) => health.subscribe(listener),
    health: o.healthService
      ? {
          current: () => health.reports().map((r) => ({ poolName: o.nodeName, ...r })),
          subscribe: (listener) => health.subscribe(listener),
        }
      : undefined,
    published: (slices) => faults?.published(slices),
  });
  // DRANET's side, when the machine has NICs to publish: a second driver on the same node with its own
  // sockets, slices, checkpoint and state dir.
  const nicSlices = o.nics ? renderNicSlices(model.machine, o.nics) : [];
  if (o.nics && nicSlices.length > 0) {
    const nicCheckpoint = new CheckpointStore(join(o.nics.stateDir, 'checkpoint.json'), o.resetCheckpoint);
    drivers.push({
      name: o.nics.driverName,
      checkpoint: nicCheckpoint,
      state: new NicState(model.machine.nics, nicCheckpoint, {
        driverName: o.nics.driverName,
        nodeName: o.nodeName,
        cdiRoot: o.cdiRoot,
        stateDir: o.nics.stateDir,
      }),
      slices: () => nicSlices,
    });
  }
  // NVIDIA's compute-domain driver, where the GPUs are in an NVLink fabric: a third driver.
  const domains =
    o.computeDomains && model.machine.fabric
      ? computeDomainNode(model.nvml, {
          ...o.computeDomains,
          nodeName: o.nodeName,
          kc,
          cdiRoot: o.cdiRoot,
          kubeletPluginsDir: o.kubeletPluginsDir,
          resetCheckpoint: o.resetCheckpoint,
          log,
        })
      : null;
  if (domains) drivers.push(domains.driver);
  // Before serving: finish or undo what a crash left, and sweep what no claim holds.
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
  const preparedCount = () => drivers.reduce((n, d) => n + d.state.held().length, 0);
  m.prepared.set(preparedCount());

  // Ready once the kubelet accepted every registration: before that, prepare calls cannot reach us.
  const registered = new Map<string, boolean>();
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
      draHandlers(d.state, { driver: d.name, claims, metrics: m, log, preparedCount }),
    );
    servers.push(s);
    log.info({ driver: d.name, dra: s.draSocket, registration: s.registrationSocket }, 'serving the kubelet');
  }
  const ready = () => [...registered.values()].every(Boolean);
  if (faults) void faults.startWithHealth();
  else health.start();

  // Slices wait for the API server; the kubelet's calls do not.
  const publishers: Publisher[] = [];
  let stopped = false;
  const stopping = new AbortController();
  const publish = async (): Promise<void> => {
    let version: Semver | null = null;
    for (let attempt = 0; version === null; attempt++) {
      if (stopped) return;
      try {
        version = await serverVersion(kc);
      } catch (e) {
        const ms = fullJitter(attempt + 1, PUBLISH_BACKOFF);
        log.warn(
          { err: e instanceof Error ? e.message : String(e), retryInMs: Math.round(ms) },
          'the API server is not answering; slices wait',
        );
        await sleep(ms, undefined, { signal: stopping.signal }).catch(() => undefined);
      }
    }
    // The probe is of the server, not of a driver: one dry run per gated field, whichever driver has it.
    const full = drivers.map((d) => d.slices(version, NOTHING_DROPPED));
    const off = await probeGates(new KubeApi(kc), full.flat());
    if (off.size > 0) log.warn({ dropped: [...off] }, gateMessage([...off], formatSemver(version)));
    for (const [i, d] of drivers.entries()) {
      if (stopped) return;
      const publisher = new Publisher(kc, {
        nodeName: o.nodeName,
        driverName: d.name,
        log,
        onSync: (_writes, devices, slices) => {
          m.published.set({ driver: d.name }, devices);
          d.published?.(slices);
        },
      });
      publisher.start(off.size === 0 ? (full[i] ?? []) : d.slices(version, off));
      d.changes?.(() => {
        publisher.update(d.slices(version, off));
      });
      publishers.push(publisher);
    }
    // A node relabelled from a GB200 to a machine without NVLink fabric: its old channel and daemon go.
    if (o.computeDomains && !domains && !stopped) {
      // Once the pool is empty, nothing is left to watch for.
      const retired: Publisher = new Publisher(kc, {
        nodeName: o.nodeName,
        driverName: COMPUTE_DOMAIN_DRIVER,
        log,
        onSync: () => {
          retired.stop();
        },
      });
      retired.start([]);
      publishers.push(retired);
    }
    await domains?.start();
  };
  const publishing = publish();

  let http: Server | null = null;
  if (o.httpEndpoint) {
    const [host, port] = splitEndpoint(o.httpEndpoint);
    http = createServer((req, res) => {
      if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      } else if (req.url === '/readyz') {
        res
          .writeHead(ready() ? 200 : 503, { 'content-type': 'text/plain' })
          .end(ready() ? 'ok\n' : 'not registered with the kubelet\n');
      } else if (req.url === '/metrics') {
        reg.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': reg.contentType }).end(text);
          },
          () => {
            res.writeHead(500).end();
          },
        );
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => http?.listen(port, host, resolve));
  }
  const dcgm = o.dcgmEndpoint
    ? await startNodeDcgm({
        endpoint: o.dcgmEndpoint,
        style: o.dcgmStyle,
        nodeName: o.nodeName,
        driverName: o.driverName,
        machine: model.machine,
        nvml: model.nvml,
        checkpoint,
        kc,
        log,
      })
    : null;

  return {
    async stop() {
      stopped = true;
      stopping.abort();
      await publishing;
      await faults?.stop();
      await domains?.stop();
      await health.stop();
      await dcgm?.stop();
      for (const p of publishers) p.stop();
      for (const s of servers) await s.stop();
      await new Promise<void>((r) => {
        if (http)
          http.close(() => {
            r();
          });
        else r();
      });
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
