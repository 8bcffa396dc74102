import { Agent } from 'node:https';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

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

  private async makeAgent(): Promise<Agent> {
    const o: ConstructorParameters<typeof Agent>[0] & object = {};
    await this.applyToHTTPSOptions(o);
    const cluster = this.getCurrentCluster();
    return new Agent({
      keepAlive: true,
      maxSockets: this.maxSockets,
      ca: o.ca,
      cert: o.cert,
      key: o.key,
      pfx: o.pfx,
      passphrase: o.passphrase,
      ...(cluster?.skipTLSVerify ? { rejectUnauthorized: false } : {}),
      ...(cluster?.tlsServerName ? { servername: cluster.tlsServerName } : {}),
    });
  }
}
