import { totalmem } from 'node:os';
import { join } from 'node:path';
import { KWOK_ANNOTATION } from '../kube/kwok.js';
import type { Toolchain } from './build.js';
import {
  featureGatesFlag,
  NODE_IP,
  PORTS,
  SERVICE_CIDR,
  writeAuditPolicy,
  writeContainerdConfig,
  writeKubeletConfig,
  writeKubeProxyConfig,
  type Layout,
} from './config.js';
import { ETCD_PKI } from './credentials.js';
import { PAUSE_IMAGE } from './image.js';
import type { KubernetesRelease } from './releases.js';
import { startDaemon, type Started } from './process.js';
import { REPO_ROOT } from '../process/repo.js';
import { kwokControllersOf, partitionArgs } from './kwok-partition.js';
import { kwokRuns, releaseOfState, type ComponentName, type State } from './state.js';

/** The upstream components as daemons: their flags for this cluster, and starting one. */

function args(l: Layout, t: Toolchain, name: ComponentName, s: State, kwok = false): string[] {
  const release = releaseOfState(s);
  const gates = `--feature-gates=${featureGatesFlag(release)}`;
  switch (name) {
    case 'etcd':
      return etcdArgs(l);
    case 'kube-apiserver':
      return apiserverArgs(l, s, release, gates);
    case 'kube-controller-manager':
      return controllerManagerArgs(l, kwok, gates);
    case 'kube-scheduler':
      return schedulerArgs(l, kwok, gates);
    case 'containerd':
      return ['--config', writeContainerdConfig(l, t.bin, t.cniBin, PAUSE_IMAGE)];
    case 'kwok':
      return kwokArgs(l, 0, kwokControllersOf(s));
    case 'fakegpu-plugin':
    case 'fakegpu-fleet':
    case 'fakegpu-compute-domain-controller':
    case 'karpenter':
    case 'kueue':
      throw new Error(`${name} is started by its own function`);
    case 'kube-proxy':
      return [`--config=${writeKubeProxyConfig(l, s.nodeName, join(l.configDir, 'kube-proxy.kubeconfig'))}`];
    case 'kubelet':
      return kubeletArgs(l, s.nodeName, release);
  }
}

/**
 * etcd over TLS, clients and peers alike, answering only certificates of its own CA (kubeadm's flags):
 * on plain http any local user could write the cluster's objects, and the cluster runs as root.
 */
function etcdArgs(l: Layout): string[] {
  const p = (f: string): string => join(l.pki, f);
  const client = `https://127.0.0.1:${PORTS.etcdClient}`;
  const peer = `https://127.0.0.1:${PORTS.etcdPeer}`;
  return [
    '--name=fakegpu',
    `--data-dir=${l.etcdData}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=fakegpu=${peer}`,
    '--client-cert-auth',
    `--trusted-ca-file=${p(`${ETCD_PKI.ca}.crt`)}`,
    `--cert-file=${p(`${ETCD_PKI.server}.crt`)}`,
    `--key-file=${p(`${ETCD_PKI.server}.key`)}`,
    '--peer-client-cert-auth',
    `--peer-trusted-ca-file=${p(`${ETCD_PKI.ca}.crt`)}`,
    `--peer-cert-file=${p(`${ETCD_PKI.peer}.crt`)}`,
    `--peer-key-file=${p(`${ETCD_PKI.peer}.key`)}`,
    // A throwaway test cluster: durability is not worth an fsync per write.
    '--unsafe-no-fsync',
    // 10,000 dynamic-MIG nodes are ~2.4 GB of slices, and a benchmark writes them twice before
    // the API server's 5-minute compaction: etcd's default 2 GiB quota would stop every write
    // (mvcc: database space exceeded). 8 GiB is the most etcd's docs advise.
    `--quota-backend-bytes=${8 * 1024 ** 3}`,
    '--listen-metrics-urls=',
  ];
}

function apiserverArgs(l: Layout, s: State, release: KubernetesRelease, gates: string): string[] {
  const p = (f: string): string => join(l.pki, f);
  return [
    `--etcd-servers=https://127.0.0.1:${PORTS.etcdClient}`,
    `--etcd-cafile=${p(`${ETCD_PKI.ca}.crt`)}`,
    `--etcd-certfile=${p(`${ETCD_PKI.client}.crt`)}`,
    `--etcd-keyfile=${p(`${ETCD_PKI.client}.key`)}`,
    // With the chart, pods reach the API server through the `kubernetes` Service, whose endpoint
    // must be an address they can route to (never loopback): the node's.
    ...(s.helm
      ? ['--bind-address=0.0.0.0', `--advertise-address=${NODE_IP}`]
      : ['--bind-address=127.0.0.1', '--advertise-address=127.0.0.1']),
    `--secure-port=${PORTS.apiserver}`,
    `--tls-cert-file=${p('apiserver.crt')}`,
    `--tls-private-key-file=${p('apiserver.key')}`,
    `--client-ca-file=${p('ca.crt')}`,
    `--kubelet-client-certificate=${p('apiserver-kubelet-client.crt')}`,
    `--kubelet-client-key=${p('apiserver-kubelet-client.key')}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${p('sa.pub')}`,
    `--service-account-signing-key-file=${p('sa.key')}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    '--allow-privileged=true',
    `--endpoint-reconciler-type=${s.helm ? 'lease' : 'none'}`,
    '--kubelet-preferred-address-types=InternalIP',
    ...(release.runtimeConfig ? [`--runtime-config=${release.runtimeConfig}`] : []),
    ...(s.auditSlices
      ? [
          `--audit-policy-file=${writeAuditPolicy(l)}`,
          `--audit-log-path=${join(l.logs, 'audit.log')}`,
          '--audit-log-format=json',
          // One file, appended across restarts: a test reads it whole, and it is purged with the cluster.
          '--audit-log-maxsize=0',
        ]
      : []),
    gates,
  ];
}

/** The controller manager and the scheduler reach the API server, and serve /healthz, alike. */
function controllerArgs(l: Layout, kubeconfig: string, port: number): string[] {
  const kc = join(l.configDir, kubeconfig);
  return [
    `--kubeconfig=${kc}`,
    `--authentication-kubeconfig=${kc}`,
    `--authorization-kubeconfig=${kc}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
  ];
}

/**
 * How long the controller manager waits for a KWOK node's heartbeat (deploy/kwok/stages.yaml, 45-55
 * minutes apart) before it calls the node lost. The first heartbeat comes 45 minutes after a node is
 * Ready: KWOK renders and PATCHes every node then (about 17 a second at 50,000 nodes, 0.4 of a core
 * of KWOK's here), so a benchmark that starts its phases later measures them beside that load.
 */
export const NODE_MONITOR_GRACE_S = 3600;

function controllerManagerArgs(l: Layout, kwok: boolean, gates: string): string[] {
  return [
    ...controllerArgs(l, 'controller-manager.kubeconfig', PORTS.controllerManager),
    `--service-account-private-key-file=${join(l.pki, 'sa.key')}`,
    `--root-ca-file=${join(l.pki, 'ca.crt')}`,
    '--use-service-account-credentials=true',
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--leader-elect=false',
    // KWOK's nodes refresh their conditions every 45-55 minutes instead of holding leases, which
    // keeps thousands of them nearly free; the node lifecycle controller must wait longer than that.
    ...(kwok ? [`--node-monitor-grace-period=${String(NODE_MONITOR_GRACE_S)}s`] : []),
    // The resource claim controller makes two writes per templated pod (the claim, the pod's
    // status): the default client limit of 20/s would cap claim pods at ~10/s, below the scheduler.
    ...(kwok ? ['--kube-api-qps=500', '--kube-api-burst=1000'] : []),
    gates,
  ];
}

function schedulerArgs(l: Layout, kwok: boolean, gates: string): string[] {
  return [
    ...controllerArgs(l, 'scheduler.kubeconfig', PORTS.scheduler),
    '--leader-elect=false',
    // Each DRA pod costs two writes (the claim's allocation, the binding): kube-scheduler's default
    // client limit of 50/s would cap a cluster of thousands of simulated nodes at ~25 pods/s.
    ...(kwok ? ['--kube-api-qps=500', '--kube-api-burst=1000'] : []),
    gates,
  ];
}

/** Stages from deploy/kwok through --config: no CRDs to install; controller `p` of `controllers`. */
export function kwokArgs(l: Layout, p: number, controllers: number): string[] {
  return [
    `--kubeconfig=${l.adminKubeconfig}`,
    `--config=${join(REPO_ROOT, 'deploy', 'kwok', 'stages.yaml')}`,
    '--manage-all-nodes=false',
    `--manage-nodes-with-annotation-selector=${KWOK_ANNOTATION}=fake`,
    '--cidr=10.246.0.0/16',
    `--node-ip=${NODE_IP}`,
    // No Lease per node: KWOK v0.8.0 defaults to one, renewed every 10 s (5,000 writes a second at 50,000
    // nodes), but only where its configuration was defaulted, which a --config document is not; measured
    // here, 2,000 nodes held none. Said outright, so a KWOK that defaults its --config does not start them:
    // the nodes' heartbeat stage and the controller manager's grace period stand in for them.
    '--node-lease-duration-seconds=0',
    ...partitionArgs(p, controllers),
  ];
}

function kubeletArgs(l: Layout, nodeName: string, release: KubernetesRelease): string[] {
  return [
    `--config=${writeKubeletConfig(l, release)}`,
    `--kubeconfig=${join(l.configDir, 'kubelet.kubeconfig')}`,
    `--root-dir=${l.kubeletRoot}`,
    `--hostname-override=${nodeName}`,
    `--node-ip=${NODE_IP}`,
  ];
}

/** One of the cluster's own binaries, with its arguments for this cluster. */
export function startComponent(
  l: Layout,
  t: Toolchain,
  s: State,
  name: ComponentName,
  log: (line: string) => void,
): Started {
  log(`starting ${name}`);
  const kwok = kwokRuns(s);
  return startDaemon(l.run, l.logs, name, join(t.bin, name), args(l, t, name, s, kwok), {
    ...env(t),
    ...goMemoryLimit(name, kwok, totalmem()),
  });
}

/**
 * With KWOK nodes, the control plane's Go processes get soft memory limits (GOMEMLIMIT), as shares of
 * this machine's memory. Left alone, each grows its heap to twice what it keeps before collecting:
 * 5,000 dynamic-MIG nodes had the API server at 12.9 GB, the scheduler at 4.4 and the controller
 * manager at 4.1 with half their slices written, and the machine (24 GiB) out of memory. A limit makes
 * them collect sooner instead; it does not cap what they keep. The API server gets half: at 50,000
 * nodes it keeps ~7.4 GB, and at 40% (9.6 GB) its collector ran every ~0.8 GB allocated, marking the
 * whole heap each time: half a core, and GC assists that slowed every write (bench/README.md).
 */
const GO_MEMORY_SHARE: Partial<Record<ComponentName, number>> = {
  'kube-apiserver': 0.5,
  'kube-scheduler': 0.15,
  'kube-controller-manager': 0.15,
  // Its DRA allocator simulates every pending pod on every node: 1,000 claim pods took it to 19.5 GB.
  karpenter: 0.15,
};

export function goMemoryLimit(
  name: ComponentName,
  kwok: boolean,
  machineBytes: number,
): Record<string, string> {
  const share = kwok ? GO_MEMORY_SHARE[name] : undefined;
  return share === undefined ? {} : { GOMEMLIMIT: `${Math.floor((machineBytes * share) / 2 ** 20)}MiB` };
}

export function env(t: Toolchain): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${t.bin}:${process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
}
