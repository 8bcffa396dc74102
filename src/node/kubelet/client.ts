import * as grpc from '@grpc/grpc-js';
import { loadProto } from './grpc.js';

/**
 * The kubelet's side of our sockets, built from the same .proto files: what tests and benchmarks call
 * the plugin with, as the kubelet does.
 */
export type KubeletClient = grpc.Client &
  Record<string, (req: unknown, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void>;

/** A client of the service at `path` in `file` (e.g. `DRA_V1` in `dra-v1.proto`) on a Unix socket. */
export function dial(file: string, path: readonly string[], socket: string): KubeletClient {
  let cur: unknown = loadProto(file);
  for (const p of path) cur = (cur as Record<string, unknown>)[p];
  const Ctor = cur as new (addr: string, creds: grpc.ChannelCredentials) => KubeletClient;
  return new Ctor(`unix://${socket}`, grpc.credentials.createInsecure());
}

/** One unary call, its answer as a promise. */
export function invoke(c: KubeletClient, method: string, req: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const fn = c[method];
    if (!fn) {
      reject(new Error(`no method ${method}`));
      return;
    }
    fn.call(c, req, (err, res) => {
      if (err) reject(err);
      else resolve(res);
    });
  });
}

/** Opens a server-streaming call (health's `NodeWatchResources`); the caller reads and cancels it. */
export function watch(c: KubeletClient, method: string, req: unknown): grpc.ClientReadableStream<unknown> {
  const fn = (c as unknown as Record<string, unknown>)[method];
  if (typeof fn !== 'function') throw new Error(`no method ${method}`);
  return (fn as (this: grpc.Client, r: unknown) => grpc.ClientReadableStream<unknown>).call(c, req);
}
