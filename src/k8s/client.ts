import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { createSecureContext } from 'node:tls';
import { KubeConfig, VersionApi, type RequestContext } from '@kubernetes/client-node';
import type { Semver } from './version.js';

/**
 * A KubeConfig whose API clients share one keep-alive HTTPS agent. client-node builds a new agent for
 * every request, so each one pays a TCP connect, a TLS handshake and a fresh TLS context: for a process
 * writing thousands of slices, most of its CPU. Credentials sent as headers (tokens, exec plugins) are
 * still applied per request; a proxied cluster keeps client-node's own agents.
 */
export class PooledKubeConfig extends KubeConfig {
  private agent: Agent | null = null;

  constructor(private readonly maxSockets: number) {
    super();
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const cluster = this.getCurrentCluster();
    if (!cluster?.server.startsWith('https:') || cluster.proxyUrl) return;
    this.agent ??= await this.makeAgent();
    context.setAgent(this.agent);
  }

  /**
   * Sends JSON the caller already holds as text and answers the response's text: for writes that are
   * made of pre-serialized pieces, where client-node would parse, copy and serialize each object again.
   * Throws an `ApiError` carrying the HTTP status for any answer but 2xx.
   */
  async send(method: string, path: string, body?: string, accept = 'application/json'): Promise<string> {
    return (await this.request(method, path, body, accept)).toString('utf8');
  }

  /**
   * A write whose answer is wanted only for the object's name and resourceVersion: the answer stays
   * bytes (outside V8's heap) but for its head, which holds both (see `writtenRef`).
   */
  async write(
    method: string,
    path: string,
    body: string,
  ): Promise<{ name: string; resourceVersion: string }> {
    const answer = await this.request(method, path, body, 'application/json');
    return writtenRef(answer.toString('utf8', 0, 2048), () => answer.toString('utf8'));
  }

  private async request(
    method: string,
    path: string,
    body: string | undefined,
    accept: string,
  ): Promise<Buffer> {
    const cluster = this.getCurrentCluster();
    if (!cluster) throw new ApiError(0, 'the kubeconfig names no current cluster');
    const o: RequestOptions = {};
    // Credentials per request, as client-node applies them: tokens from files and exec plugins rotate.
    await this.applyToHTTPSOptions(o);
    const url = new URL(cluster.server);
    const https = url.protocol === 'https:';
    if (https) this.agent ??= await this.makeAgent();
    const prefix = url.pathname.replace(/\/$/, '');
    return new Promise((resolve, reject) => {
      const req = (https ? httpsRequest : httpRequest)(
        {
          hostname: url.hostname,
          port: url.port,
          method,
          path: prefix + path,
          headers: {
            ...(o.headers as Record<string, string> | undefined),
            accept,
            // The API server names the field manager of what we write after it.
            'user-agent': 'fakegpu',
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(https ? { agent: this.agent ?? undefined } : {}),
          ...(o.auth ? { auth: o.auth } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const answer = Buffer.concat(chunks);
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) resolve(answer);
            else
              reject(
                new ApiError(status, `${method} ${path}: HTTP ${status}: ${answer.toString('utf8', 0, 500)}`),
              );
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  private async makeAgent(): Promise<Agent> {
    const o: ConstructorParameters<typeof Agent>[0] & object = {};
    await this.applyToHTTPSOptions(o);
    const cluster = this.getCurrentCluster();
    return new Agent({
      keepAlive: true,
      maxSockets: this.maxSockets,
      // One TLS context for every connection: given the certificates instead, each connection parses
      // them into a context of its own, about half a MiB resident apiece.
      secureContext: createSecureContext({
        ca: o.ca,
        cert: o.cert,
        key: o.key,
        pfx: o.pfx,
        passphrase: o.passphrase,
      }),
      ...(cluster?.skipTLSVerify ? { rejectUnauthorized: false } : {}),
      ...(cluster?.tlsServerName ? { servername: cluster.tlsServerName } : {}),
    });
  }
}

/** A non-2xx answer of the API server; `code` as client-node's ApiException has it. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * The name and resourceVersion of the object the API server answered a write with. They are read from
 * the head of the text, where the server's encoder puts them (ObjectMeta in Go field order: name, …,
 * uid, resourceVersion), because parsing all of it (the spec and its managedFields) would cost a writer
 * of thousands of large objects more than building them did; any other shape is parsed whole.
 */
export function writtenRef(
  head: string,
  whole: () => string = () => head,
): { name: string; resourceVersion: string } {
  const m = HEAD.exec(head.slice(0, 2048));
  if (m?.[1] && m[2]) return { name: own(m[1]), resourceVersion: own(m[2]) };
  const o = JSON.parse(whole()) as { metadata?: { name?: string; resourceVersion?: string } };
  return { name: o.metadata?.name ?? '', resourceVersion: o.metadata?.resourceVersion ?? '' };
}

const HEAD =
  /^\{"kind":"[A-Za-z]+","apiVersion":"[^"]+","metadata":\{"name":"([a-z0-9.-]+)",(?:"[a-zA-Z]+":(?:"[^"\\]*"|\d+),)*?"resourceVersion":"(\d+)"/;

/**
 * A copy of `s` that does not hold on to the text it was cut from: V8 keeps a substring as a view of
 * its parent, so a name kept from each answer would keep each whole answer alive.
 */
function own(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}

/** The API server's version decides the slice layout under dynamic MIG, as in the real driver. */
export async function serverVersion(kc: KubeConfig): Promise<Semver> {
  const v = await kc.makeApiClient(VersionApi).getCode();
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v.gitVersion);
  return m
    ? { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) }
    : { major: 1, minor: 37, patch: 0 };
}
