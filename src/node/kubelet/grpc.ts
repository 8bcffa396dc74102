import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { FakegpuError } from '../../errors.js';
import { HEALTH_SERVICES, HEALTH_V1, HEALTH_V1ALPHA1, healthService, type HealthSource } from './health.js';
import { REPO_ROOT } from '../../process/repo.js';

/**
 * The kubelet-facing gRPC servers: plugin registration on `<registrar>/<driver>-reg.sock` and the DRA
 * service (v1 and v1beta1) on `<plugins>/<driver>/dra.sock`, both from our own .proto files. With a
 * health source, the DRA socket also serves device health (`health.ts`, v1 and v1alpha1).
 */

const PROTO_DIR = join(REPO_ROOT, 'proto');

export interface ClaimRef {
  namespace: string;
  uid: string;
  name: string;
}

export interface Device {
  requestNames: string[];
  poolName: string;
  deviceName: string;
  cdiDeviceIds: string[];
  shareId?: string;
}

export interface PrepareResponse {
  claims: Record<string, { devices: Device[]; error: string }>;
}

export interface UnprepareResponse {
  claims: Record<string, { error: string }>;
}

export interface DraHandlers {
  prepare(claims: ClaimRef[]): Promise<PrepareResponse>;
  unprepare(claims: ClaimRef[]): Promise<UnprepareResponse>;
}

const LOADER: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

export function loadProto(file: string): grpc.GrpcObject {
  return grpc.loadPackageDefinition(protoLoader.loadSync(join(PROTO_DIR, file), LOADER));
}

function service(pkg: grpc.GrpcObject, path: string[]): grpc.ServiceDefinition {
  let cur: unknown = pkg;
  for (const p of path) cur = (cur as Record<string, unknown>)[p];
  const ctor = cur as { service?: grpc.ServiceDefinition } | undefined;
  if (!ctor?.service) throw new Error(`service ${path.join('.')} not found in proto`);
  return ctor.service;
}

export const DRA_V1 = ['k8s', 'io', 'kubelet', 'pkg', 'apis', 'dra', 'v1', 'DRAPlugin'];
export const DRA_V1BETA1 = ['k8s', 'io', 'kubelet', 'pkg', 'apis', 'dra', 'v1beta1', 'DRAPlugin'];
export const REGISTRATION = ['pluginregistration', 'Registration'];

type Unary<Req, Res> = grpc.handleUnaryCall<Req, Res>;

function unary<Req, Res>(fn: (req: Req) => Promise<Res>): Unary<Req, Res> {
  return (call, callback) => {
    fn(call.request).then(
      (res) => {
        callback(null, res);
      },
      (e: unknown) => {
        callback({ code: grpc.status.INTERNAL, details: e instanceof Error ? e.message : String(e) });
      },
    );
  };
}

/** Whether a process accepts connections on the Unix socket: a stale file left by a crash does not. */
function served(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => {
      resolve(false);
    });
  });
}

/**
 * A socket file a crash left behind is replaced; one that another process still serves (NVIDIA's
 * driver, a second plugin of the same name) is not taken over.
 */
export async function refuseServed(path: string): Promise<void> {
  if (existsSync(path) && (await served(path)))
    throw new FakegpuError(
      path,
      "another process serves this socket (NVIDIA's DRA driver, or a second plugin with the same driver name); stop it first",
    );
}

/** Binds a server to a Unix socket owned by root with mode 0600, replacing a stale socket file. */
async function listen(server: grpc.Server, path: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  rmSync(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix://${path}`, grpc.ServerCredentials.createInsecure(), (err) => {
      if (err) reject(err);
      else resolve();
    });
  });
  chmodSync(path, 0o600);
}

export interface DraServerOptions {
  driverName: string;
  pluginsDir: string;
  registrarDir: string;
  onRegistration: (registered: boolean, error: string) => void;
  /**
   * Device health for the kubelet (KEP-4680). Absent, the health service is neither served nor
   * advertised, as in NVIDIA's driver.
   */
  health?: HealthSource;
  /** Longest gap between health messages; default `DEFAULT_HEARTBEAT_MS` (health.ts). */
  healthHeartbeatMs?: number;
}

export interface RunningServers {
  draSocket: string;
  registrationSocket: string;
  stop(): Promise<void>;
}

/** Where a driver's two sockets live, as the kubelet expects them. */
export function socketPaths(o: Pick<DraServerOptions, 'driverName' | 'pluginsDir' | 'registrarDir'>) {
  return {
    draSocket: join(o.pluginsDir, o.driverName, 'dra.sock'),
    registrationSocket: join(o.registrarDir, `${o.driverName}-reg.sock`),
  };
}

/** Starts the DRA service first, then registration, so the kubelet never dials a socket not yet served. */
export async function startServers(o: DraServerOptions, h: DraHandlers): Promise<RunningServers> {
  const { draSocket, registrationSocket } = socketPaths(o);
  await refuseServed(draSocket);
  await refuseServed(registrationSocket);
  const dra = new grpc.Server();
  const handlers = {
    NodePrepareResources: unary<{ claims: ClaimRef[] }, PrepareResponse>((req) => h.prepare(req.claims)),
    NodeUnprepareResources: unary<{ claims: ClaimRef[] }, UnprepareResponse>((req) =>
      h.unprepare(req.claims),
    ),
  };
  dra.addService(service(loadProto('dra-v1.proto'), DRA_V1), handlers);
  dra.addService(service(loadProto('dra-v1beta1.proto'), DRA_V1BETA1), handlers);
  const health = o.health ? healthService(o.health, { heartbeatMs: o.healthHeartbeatMs }) : undefined;
  if (health) {
    dra.addService(service(loadProto('dra-health-v1.proto'), HEALTH_V1), health.implementation);
    dra.addService(service(loadProto('dra-health-v1alpha1.proto'), HEALTH_V1ALPHA1), health.implementation);
  }
  await listen(dra, draSocket);
  const supportedVersions = ['v1.DRAPlugin', 'v1beta1.DRAPlugin', ...(health ? HEALTH_SERVICES : [])];

  const reg = new grpc.Server();
  reg.addService(service(loadProto('pluginregistration.proto'), REGISTRATION), {
    GetInfo: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
      cb(null, {
        type: 'DRAPlugin',
        name: o.driverName,
        endpoint: draSocket,
        supportedVersions,
      });
    },
    NotifyRegistrationStatus: (
      call: grpc.ServerUnaryCall<{ pluginRegistered: boolean; error: string }, unknown>,
      cb: grpc.sendUnaryData<unknown>,
    ) => {
      o.onRegistration(call.request.pluginRegistered, call.request.error);
      cb(null, {});
    },
  });
  await listen(reg, registrationSocket);

  return {
    draSocket,
    registrationSocket,
    async stop() {
      // Removing the registration socket deregisters the plugin; the DRA socket goes last.
      rmSync(registrationSocket, { force: true });
      await new Promise<void>((r) => {
        reg.tryShutdown(() => {
          r();
        });
      });
      // A health stream never ends by itself, and a graceful shutdown waits for every open call.
      health?.close();
      await new Promise<void>((r) => {
        dra.tryShutdown(() => {
          r();
        });
      });
      rmSync(draSocket, { force: true });
    },
  };
}
