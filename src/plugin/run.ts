import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { serverVersion } from '../k8s/client.js';
import { splitEndpoint } from '../net/endpoint.js';
import { pino, type Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { parseAllDocuments } from 'yaml';
import { CheckpointStore } from '../checkpoint/checkpoint.js';
import type { FeatureGates } from '../config/nvidia.js';
import type { DriverRelease } from '../device/release.js';
import { FakegpuError } from '../errors.js';
import type { Machine } from '../hardware/machine.js';
import type { ResourceSlice } from '../k8s/resource.js';
import type { Semver } from '../k8s/version.js';
import {
  startServers,
  type ClaimRef,
  type PrepareResponse,
  type RunningServers,
  type UnprepareResponse,
} from '../kubelet/grpc.js';
import { NicState } from '../nic/prepare.js';
import { FileMigStateStore } from '../nvml/state-file.js';
import { resolveProfile, type ResolvedProfile } from '../profile/load.js';
import { PrepareError } from '../prepare/node.js';
import { DeviceState } from '../prepare/state.js';
import type { ResourceClaim } from '../prepare/claim.js';
import { Publisher } from '../publish/publisher.js';
import { modelNode, renderNicSlices, type NicRenderOptions } from '../render.js';
import { buildSlices } from '../slice/build.js';
import { join } from 'node:path';

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
  gates: FeatureGates;
  resetCheckpoint: boolean;
  /** DRANET's NICs beside the GPUs; absent: GPUs only. */
  nics?: (NicRenderOptions & { stateDir: string }) | undefined;
  log?: Logger;
}

export interface RunningPlugin {
  stop(): Promise<void>;
}

/** Slices replayed from a file: the node's name goes where the capture had its own. */
export function slicesFromFile(path: string, nodeName: string, driverName: string): ResourceSlice[] {
  const docs = parseAllDocuments(readFileSync(path, 'utf8')).map((d) => d.toJS() as unknown);
  const items = docs.flatMap((d) => {
    const o = d as { kind?: string; items?: unknown[] };
    return o.kind === 'List' || o.kind === 'ResourceSliceList' ? (o.items ?? []) : [d];
  }) as Partial<ResourceSlice>[];
  if (items.length === 0) throw new FakegpuError('--slices-file', `${path} holds no ResourceSlice`);
  return items.map((s, i) => {
    if (s.kind !== 'ResourceSlice' || !s.spec)
      throw new FakegpuError(
        '--slices-file',
        `${path}: item ${i} is a ${s.kind ?? 'object without kind'}, not a ResourceSlice`,
      );
    return {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { generateName: `${i.toString(16).padStart(5, '0')}-${driverName}-${nodeName}-` },
      spec: {
        ...s.spec,
        driver: driverName,
        nodeName,
        pool: { name: nodeName, generation: 1, resourceSliceCount: items.length },
      },
    };
  });
}

function metrics(reg: Registry) {
  collectDefaultMetrics({ register: reg, prefix: 'fakegpu_' });
  return {
    requests: new Counter({
      name: 'fakegpu_dra_requests_total',
      help: 'DRA gRPC requests by method and result',
      labelNames: ['method', 'result'],
      registers: [reg],
    }),
    latency: new Histogram({
      name: 'fakegpu_dra_request_duration_seconds',
      help: 'DRA gRPC request latency by method',
      labelNames: ['method'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [reg],
    }),
    published: new Gauge({
      name: 'fakegpu_published_devices',
      help: 'devices in the ResourceSlices this node publishes, by driver',
      labelNames: ['driver'],
      registers: [reg],
    }),
    prepared: new Gauge({
      name: 'fakegpu_prepared_claims',
      help: 'claims currently prepared on this node',
      registers: [reg],
    }),
  };
}

export async function runPlugin(o: PluginOptions): Promise<RunningPlugin> {
  const log = o.log ?? pino({ name: 'fakegpu-plugin', base: { node: o.nodeName, driver: o.driverName } });
  const kc = new KubeConfig();
  if (o.kubeconfig) kc.loadFromFile(o.kubeconfig);
  else kc.loadFromDefault();
  const claims = kc.makeApiClient(CustomObjectsApi);

  let profile = o.profile;
  if (o.profileLabel) {
    const node = await kc.makeApiClient(CoreV1Api).readNode({ name: o.nodeName });
    const value = node.metadata?.labels?.[o.profileLabel];
    if (value) {
      profile = resolveProfile(value, `node label ${o.profileLabel}`);
      log.info({ label: o.profileLabel, profile: value }, 'profile chosen by node label');
    }
  }
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
  const version = await serverVersion(kc);
  const desired = o.slicesFile
    ? slicesFromFile(o.slicesFile, o.nodeName, o.driverName)
    : buildSlices(model.devices, {
        nodeName: o.nodeName,
        driverName: o.driverName,
        dynamicMig: o.dynamicMig,
        kubernetesVersion: version,
        release: o.release,
      });

  const checkpoint = new CheckpointStore(join(o.stateDir, 'checkpoint.json'), o.resetCheckpoint);
  const state = new DeviceState(model.machine, model.nvml, model.devices, checkpoint, {
    driverName: o.driverName,
    nodeName: o.nodeName,
    cdiRoot: o.cdiRoot,
    stateDir: o.stateDir,
    gates: o.gates,
  });
  const stale = state.restore();
  if (stale.length > 0)
    log.warn({ claims: stale }, 'prepared claims refer to devices this machine no longer has');

  // DRANET's side, when the machine has NICs to publish: a second driver on the same node with its own
  // sockets, slices, checkpoint and state dir.
  const nicSlices = o.nics ? renderNicSlices(model.machine, o.nics) : [];
  let nic: { driver: string; slices: ResourceSlice[]; state: NicState; checkpoint: CheckpointStore } | null =
    null;
  if (o.nics && nicSlices.length > 0) {
    const nicCheckpoint = new CheckpointStore(join(o.nics.stateDir, 'checkpoint.json'), o.resetCheckpoint);
    const nicState = new NicState(model.machine.nics, nicCheckpoint, {
      driverName: o.nics.driverName,
      nodeName: o.nodeName,
      cdiRoot: o.cdiRoot,
      stateDir: o.nics.stateDir,
    });
    const staleNics = nicState.restore();
    if (staleNics.length > 0)
      log.warn({ claims: staleNics }, 'prepared NIC claims refer to NICs this machine no longer has');
    nic = { driver: o.nics.driverName, slices: nicSlices, state: nicState, checkpoint: nicCheckpoint };
  }
  const preparedCount = () => checkpoint.all().length + (nic?.checkpoint.all().length ?? 0);

  const reg = new Registry();
  const m = metrics(reg);
  m.prepared.set(preparedCount());

  const readClaim = async (ref: ClaimRef): Promise<ResourceClaim> => {
    const c = (await claims.getNamespacedCustomObject({
      group: 'resource.k8s.io',
      version: 'v1',
      namespace: ref.namespace,
      plural: 'resourceclaims',
      name: ref.name,
    })) as ResourceClaim;
    if (c.metadata.uid !== ref.uid) {
      throw new PrepareError(
        `error preparing devices for claim ${ref.namespace}/${ref.name}:${ref.uid}: claim ${ref.namespace}/${ref.name} got replaced`,
      );
    }
    return c;
  };

  const timed = async <T>(method: string, fn: () => Promise<T>): Promise<T> => {
    const end = m.latency.startTimer({ method });
    try {
      return await fn();
    } finally {
      end();
    }
  };

  const handlers = (
    driver: string,
    st: { prepare: DeviceState['prepare']; unprepare: DeviceState['unprepare'] },
  ) => ({
    prepare: (refs: ClaimRef[]) =>
      timed('NodePrepareResources', async () => {
        const out: PrepareResponse['claims'] = {};
        await Promise.all(
          refs.map(async (ref) => {
            try {
              const devices = await st.prepare(await readClaim(ref));
              out[ref.uid] = {
                devices: devices.map(({ requestNames, poolName, deviceName, cdiDeviceIds }) => ({
                  requestNames,
                  poolName,
                  deviceName,
                  cdiDeviceIds,
                })),
                error: '',
              };
              m.requests.inc({ method: 'NodePrepareResources', result: 'success' });
              log.info(
                {
                  driver,
                  claim: `${ref.namespace}/${ref.name}`,
                  uid: ref.uid,
                  devices: devices.map((d) => d.deviceName),
                },
                'prepared claim',
              );
            } catch (e) {
              const msg = e instanceof Error ? e.message : String(e);
              const error =
                e instanceof PrepareError
                  ? msg
                  : `error preparing devices for claim ${ref.namespace}/${ref.name}:${ref.uid}: ${msg}`;
              out[ref.uid] = { devices: [], error };
              m.requests.inc({ method: 'NodePrepareResources', result: 'error' });
              log.warn(
                { driver, claim: `${ref.namespace}/${ref.name}`, uid: ref.uid, error },
                'prepare failed',
              );
            }
          }),
        );
        m.prepared.set(preparedCount());
        return { claims: out };
      }),
    unprepare: (refs: ClaimRef[]) =>
      timed('NodeUnprepareResources', async () => {
        const out: UnprepareResponse['claims'] = {};
        for (const ref of refs) {
          try {
            await st.unprepare(ref.uid);
            out[ref.uid] = { error: '' };
            m.requests.inc({ method: 'NodeUnprepareResources', result: 'success' });
            log.info({ driver, claim: `${ref.namespace}/${ref.name}`, uid: ref.uid }, 'unprepared claim');
          } catch (e) {
            const msg = e instanceof Error ? e.message : String(e);
            out[ref.uid] = {
              error: `error unpreparing devices for claim ${ref.namespace}/${ref.name}:${ref.uid}: ${msg}`,
            };
            m.requests.inc({ method: 'NodeUnprepareResources', result: 'error' });
          }
        }
        m.prepared.set(preparedCount());
        return { claims: out };
      }),
  });

  // Ready once the kubelet accepted every registration: before that, prepare calls cannot reach us.
  const registered = new Map<string, boolean>();
  const register = (driver: string) => ({
    driverName: driver,
    pluginsDir: o.kubeletPluginsDir,
    registrarDir: o.kubeletRegistrarDir,
    onRegistration: (ok: boolean, error?: string) => {
      registered.set(driver, ok);
      if (ok) log.info({ driver }, 'registered with the kubelet');
      else log.error({ driver, error }, 'the kubelet refused the registration');
    },
  });
  /** One driver's kubelet sockets and its published slices. */
  const serve = async (
    driver: string,
    st: { prepare: DeviceState['prepare']; unprepare: DeviceState['unprepare'] },
    slices: ResourceSlice[],
  ): Promise<{ servers: RunningServers; publisher: Publisher }> => {
    registered.set(driver, false);
    const servers = await startServers(register(driver), handlers(driver, st));
    log.info(
      { driver, dra: servers.draSocket, registration: servers.registrationSocket },
      'serving the kubelet',
    );
    const publisher = new Publisher(kc, {
      nodeName: o.nodeName,
      driverName: driver,
      log,
      onSync: (_writes, devices) => {
        m.published.set({ driver }, devices);
      },
    });
    publisher.start(slices);
    return { servers, publisher };
  };
  const drivers = [await serve(o.driverName, state, desired)];
  if (nic) drivers.push(await serve(nic.driver, nic.state, nic.slices));
  const ready = () => [...registered.values()].every(Boolean);

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

  return {
    async stop() {
      for (const d of drivers) d.publisher.stop();
      for (const d of drivers) await d.servers.stop();
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
