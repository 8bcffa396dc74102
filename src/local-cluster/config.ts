import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { KubernetesRelease } from './releases.js';

/** Where everything of one cluster lives; `--dir` chooses the root. */
export interface Layout {
  dir: string;
  pki: string;
  run: string;
  logs: string;
  etcdData: string;
  containerdRoot: string;
  containerdState: string;
  containerdSock: string;
  kubeletRoot: string;
  cdiDir: string;
  cniConf: string;
  cniState: string;
  adminKubeconfig: string;
  configDir: string;
}

export function layout(dir: string): Layout {
  return {
    dir,
    pki: join(dir, 'pki'),
    run: join(dir, 'run'),
    logs: join(dir, 'logs'),
    etcdData: join(dir, 'etcd'),
    containerdRoot: join(dir, 'containerd', 'root'),
    containerdState: join(dir, 'containerd', 'state'),
    containerdSock: join(dir, 'containerd', 'state', 'containerd.sock'),
    kubeletRoot: join(dir, 'kubelet'),
    cdiDir: join(dir, 'cdi'),
    cniConf: join(dir, 'cni', 'net.d'),
    cniState: join(dir, 'cni', 'state'),
    adminKubeconfig: join(dir, 'admin.kubeconfig'),
    configDir: join(dir, 'config'),
  };
}

export const PORTS = {
  apiserver: 6443,
  etcdClient: 2379,
  etcdPeer: 2380,
  controllerManager: 10257,
  scheduler: 10259,
  kubelet: 10250,
  kubeletHealthz: 10248,
  kubeProxyHealthz: 10256,
  kubeProxyMetrics: 10249,
} as const;

export const SERVICE_CIDR = '10.96.0.0/16';
/** The `kubernetes` Service's cluster IP and port, as in-cluster clients reach the API server. */
export const KUBERNETES_SERVICE = '10.96.0.1:443';
/**
 * The kubelet refuses a loopback node IP, so the node gets an address on a port-less bridge of its own
 * (these VMs' kernels have no dummy links); traffic to it never leaves the machine.
 */
export const NODE_IP = '10.250.0.1';
export const NODE_LINK = 'fakegpu-host';
export const POD_CIDR = '10.244.0.0/24';

/** The release's DRA gates (releases.ts) as the components' `--feature-gates` flag. */
export function featureGatesFlag(r: KubernetesRelease): string {
  return Object.entries(r.featureGates)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

export function writeContainerdConfig(l: Layout, bin: string, cniBin: string, pauseImage: string): string {
  const path = join(l.configDir, 'containerd.toml');
  mkdirSync(l.configDir, { recursive: true });
  const q = (s: string): string => JSON.stringify(s);
  writeFileSync(
    path,
    `# Written by fakegpu cluster up.
version = 3
root = ${q(l.containerdRoot)}
state = ${q(l.containerdState)}

[grpc]
  address = ${q(l.containerdSock)}

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = ${q(pauseImage)}

[plugins.'io.containerd.cri.v1.runtime']
  cdi_spec_dirs = [${q(l.cdiDir)}]
  netns_mounts_under_state_dir = true
  # The VM withholds CAP_SYS_RESOURCE, so no process may lower its OOM score below containerd's own.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = ${q(join(bin, 'runc'))}
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [${q(cniBin)}]
    conf_dir = ${q(l.cniConf)}
`,
  );
  return path;
}

export function writeCniConfig(l: Layout): void {
  mkdirSync(l.cniConf, { recursive: true });
  const conf = {
    cniVersion: '1.0.0',
    name: 'fakegpu',
    plugins: [
      {
        type: 'bridge',
        bridge: 'fakegpu0',
        isGateway: true,
        ipMasq: false,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: POD_CIDR }]],
          // Through the bridge to the host: the node's address and the Services kube-proxy serves
          // (with --helm, the chart's pods reach the API server so). No default route: nothing else
          // is there to reach.
          routes: [{ dst: SERVICE_CIDR }, { dst: `${NODE_IP}/32` }],
          dataDir: l.cniState,
        },
      },
      { type: 'loopback' },
    ],
  };
  writeFileSync(join(l.cniConf, '10-fakegpu.conflist'), `${JSON.stringify(conf, null, 2)}\n`);
}

export function writeKubeletConfig(l: Layout, r: KubernetesRelease): string {
  const path = join(l.configDir, 'kubelet.yaml');
  mkdirSync(l.configDir, { recursive: true });
  const config = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: NODE_IP,
    port: PORTS.kubelet,
    healthzBindAddress: '127.0.0.1',
    healthzPort: PORTS.kubeletHealthz,
    readOnlyPort: 0,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: join(l.pki, 'ca.crt') },
    },
    authorization: { mode: 'Webhook' },
    tlsCertFile: join(l.pki, 'kubelet-serving.crt'),
    tlsPrivateKeyFile: join(l.pki, 'kubelet-serving.key'),
    containerRuntimeEndpoint: `unix://${l.containerdSock}`,
    // These VMs run cgroup v1, which kubelets since 1.35 refuse unless told otherwise (KEP-5573).
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    failSwapOn: false,
    clusterDomain: 'cluster.local',
    clusterDNS: [],
    resolvConf: '/etc/resolv.conf',
    podCIDR: POD_CIDR,
    maxPods: 110,
    // A pod whose prepare failed (its plugin restarting) is retried at the next sync: every 10 s here
    // rather than the default minute, so tests and the chaos suite wait for the fault, not the kubelet.
    syncFrequency: '10s',
    // A test cluster on a busy developer disk must not evict its own pods.
    evictionHard: {
      'memory.available': '1Mi',
      'nodefs.available': '0%',
      'imagefs.available': '0%',
      'nodefs.inodesFree': '0%',
    },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    featureGates: r.featureGates,
    shutdownGracePeriod: '0s',
  };
  writeFileSync(path, stringify(config));
  return path;
}

/**
 * kube-proxy for `cluster up --helm`, in nftables mode (the kernel's nftables and Debian's `nft` are
 * all it needs). It leaves the kernel's conntrack settings alone: a VM may not allow them to be set.
 */
export function writeKubeProxyConfig(l: Layout, nodeName: string, kubeconfig: string): string {
  const path = join(l.configDir, 'kube-proxy.yaml');
  mkdirSync(l.configDir, { recursive: true });
  const config = {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig },
    mode: 'nftables',
    hostnameOverride: nodeName,
    clusterCIDR: POD_CIDR,
    healthzBindAddress: `127.0.0.1:${PORTS.kubeProxyHealthz}`,
    metricsBindAddress: `127.0.0.1:${PORTS.kubeProxyMetrics}`,
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
  };
  writeFileSync(path, stringify(config));
  return path;
}

/**
 * An audit policy that records each ResourceSlice write with the slice (without its managed fields), once
 * complete: the node it is for, the process that sent it (the user agent) and when the server got it.
 */
export function writeAuditPolicy(l: Layout): string {
  const path = join(l.configDir, 'audit-policy.yaml');
  mkdirSync(l.configDir, { recursive: true });
  writeFileSync(
    path,
    stringify({
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      omitStages: ['RequestReceived', 'ResponseStarted'],
      omitManagedFields: true,
      rules: [
        {
          level: 'RequestResponse',
          verbs: ['create', 'update', 'patch', 'delete'],
          resources: [{ group: 'resource.k8s.io', resources: ['resourceslices'] }],
        },
        { level: 'None' },
      ],
    }),
  );
  return path;
}
