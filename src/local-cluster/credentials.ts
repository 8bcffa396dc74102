import { join } from 'node:path';
import { NODE_IP, PORTS, type Layout } from './config.js';
import { ensureCa, ensureCert, ensureServiceAccountKey, writeKubeconfig } from './pki.js';

/** Each component's certificate and kubeconfig, and the admin's; made once, kept across restarts. */
export function ensurePki(l: Layout, nodeName: string): void {
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
