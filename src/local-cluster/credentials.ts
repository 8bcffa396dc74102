import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_IP, PORTS, type Layout } from './config.js';
import { ensureCa, ensureCert, ensureServiceAccountKey, writeKubeconfig } from './pki.js';

const LOCAL = 'DNS:localhost,IP:127.0.0.1';

/** etcd's files in the PKI folder, kubeadm's names: its CA, serving and peer pairs, the API server's client pair. */
export const ETCD_PKI = {
  ca: 'etcd/ca',
  server: 'etcd/server',
  peer: 'etcd/peer',
  client: 'apiserver-etcd-client',
} as const;

/**
 * etcd's certificates, signed by its own CA. Each is made only where missing, so a cluster directory
 * from before etcd served TLS gets them on its next `up`.
 */
function ensureEtcdPki(l: Layout): void {
  ensureCa(l.pki, ETCD_PKI.ca, 'fakegpu-etcd-ca');
  const signed = { ca: ETCD_PKI.ca, san: LOCAL, usage: 'both' } as const;
  ensureCert(l.pki, { ...signed, file: ETCD_PKI.server, cn: 'fakegpu-etcd' });
  ensureCert(l.pki, { ...signed, file: ETCD_PKI.peer, cn: 'fakegpu-etcd-peer' });
  ensureCert(l.pki, {
    file: ETCD_PKI.client,
    ca: ETCD_PKI.ca,
    cn: 'kube-apiserver-etcd-client',
    usage: 'client',
  });
}

/** etcd's client TLS as Node's https takes it: what `up` probes etcd's /health with. */
export function etcdClientTls(l: Layout): { ca: Buffer; cert: Buffer; key: Buffer } {
  const p = (f: string): Buffer => readFileSync(join(l.pki, f));
  return { ca: p(`${ETCD_PKI.ca}.crt`), cert: p(`${ETCD_PKI.client}.crt`), key: p(`${ETCD_PKI.client}.key`) };
}

/** Each component's certificate and kubeconfig, and the admin's; made once, kept across restarts. */
export function ensurePki(l: Layout, nodeName: string): void {
  ensureCa(l.pki);
  ensureServiceAccountKey(l.pki);
  ensureEtcdPki(l);
  const local = LOCAL;
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
  // Bound to system:node-proxier by the API server's bootstrap roles.
  ensureCert(l.pki, { file: 'kube-proxy', cn: 'system:kube-proxy', usage: 'client' });
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
  writeKubeconfig(join(l.configDir, 'kube-proxy.kubeconfig'), l.pki, server, 'kube-proxy', 'kube-proxy');
  writeKubeconfig(
    join(l.configDir, 'kubelet.kubeconfig'),
    l.pki,
    server,
    `system:node:${nodeName}`,
    `kubelet-${nodeName}`,
  );
}
