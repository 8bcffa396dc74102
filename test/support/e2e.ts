import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from '../../src/local-cluster/build.js';
import { PLUGIN_HTTP, type Exports } from '../../src/local-cluster/cluster.js';
import { HELM_NAMESPACE, pluginPodQuery } from '../../src/local-cluster/helm-chart.js';
import { eventually, kubectl, mustKubectl, sharedCluster } from './cluster.js';

/** The end-to-end cluster: a node that fakegpu's plugin turns into a DGX H100. */
export const E2E_CLUSTER_DIR = process.env['FAKEGPU_E2E_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-cluster');
export const E2E_NODE = 'fakegpu-e2e-node';
export const E2E_PROFILE = 'dgx-h100';

/** The dynamic-MIG cluster: the same machine with every MIG partition published. */
export const MIG_CLUSTER_DIR =
  process.env['FAKEGPU_E2E_MIG_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-mig-cluster');
export const MIG_NODE = 'fakegpu-mig-node';

export function migCluster(): Promise<Exports> {
  return sharedCluster({ dir: MIG_CLUSTER_DIR, nodeName: MIG_NODE, profile: E2E_PROFILE, dynamicMig: true });
}

/** Static MIG: a DGX A100 with seven 1g.5gb devices per GPU. */
export const STATIC_MIG_CLUSTER_DIR =
  process.env['FAKEGPU_E2E_STATIC_MIG_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-static-mig-cluster');
export const STATIC_MIG_NODE = 'fakegpu-a100-node';
export const STATIC_MIG_PROFILE = fileURLToPath(
  new URL('../../../test/fixtures/profiles/dgx-a100-mig.yaml', import.meta.url),
);

export function staticMigCluster(): Promise<Exports> {
  return sharedCluster({
    dir: STATIC_MIG_CLUSTER_DIR,
    nodeName: STATIC_MIG_NODE,
    profile: STATIC_MIG_PROFILE,
  });
}

/** GPU–NIC alignment: an AWS p4d (and, relabelled, an OCI GB200) with NICs carrying the standard NUMA key. */
export const TOPO_CLUSTER_DIR =
  process.env['FAKEGPU_E2E_TOPO_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-topo-cluster');
export const TOPO_NODE = 'fakegpu-topo-node';
export const TOPO_PROFILE = 'aws-p4d.24xlarge';

export function topoCluster(): Promise<Exports> {
  return sharedCluster({
    dir: TOPO_CLUSTER_DIR,
    nodeName: TOPO_NODE,
    profile: TOPO_PROFILE,
    nicNumaAttribute: 'standard',
  });
}

/** NVIDIA v0.5.0's newer gates together on one DGX H100: shares, VFIO, Fabric Manager, list attributes. */
export const NVIDIA_CLUSTER_DIR =
  process.env['FAKEGPU_E2E_NVIDIA_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-nvidia-cluster');
export const NVIDIA_NODE = 'fakegpu-h100-node';
export const NVIDIA_GATES =
  'ConsumableShares=true,PassthroughSupport=true,DeviceMetadata=true,DRAListTypeAttributes=true,FabricManagerPartitioning=true';

export function nvidiaCluster(): Promise<Exports> {
  return sharedCluster({
    dir: NVIDIA_CLUSTER_DIR,
    nodeName: NVIDIA_NODE,
    profile: E2E_PROFILE,
    pluginGates: NVIDIA_GATES,
    consumableShares: 'memory',
  });
}

export const FAULTS_CLUSTER_DIR =
  process.env['FAKEGPU_E2E_FAULTS_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-faults-cluster');
export const FAULTS_NODE = 'fakegpu-faults-node';
/** 8,000 KWOK GPUs beside the plugin's node. */
export const FAULTS_KWOK_NODES = 1000;

/** A DGX H100 whose plugin runs NVIDIA's health monitor and serves device health, beside a KWOK fleet. */
export function faultsCluster(): Promise<Exports> {
  return sharedCluster({
    dir: FAULTS_CLUSTER_DIR,
    nodeName: FAULTS_NODE,
    profile: E2E_PROFILE,
    pluginGates: 'NVMLDeviceHealthCheck=true',
    healthService: true,
    kwokNodes: FAULTS_KWOK_NODES,
  });
}

export const CD_CLUSTER_DIR =
  process.env['FAKEGPU_E2E_CD_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-cd-cluster');
export const CD_NODE = 'fakegpu-gb200-node';
export const CD_PROFILE = 'oci-bm.gpu.gb200.4';
/** Two NVL72 racks of GB200 trays beside the local one. */
export const CD_KWOK_NODES = 36;

/** A GB200 tray whose plugin also serves ComputeDomains, beside two KWOK racks. */
export function computeDomainsCluster(): Promise<Exports> {
  return sharedCluster({
    dir: CD_CLUSTER_DIR,
    nodeName: CD_NODE,
    profile: CD_PROFILE,
    kwokNodes: CD_KWOK_NODES,
  });
}

/** `npm run e2e:matrix`: one cluster per Kubernetes release, each in this directory in turn. */
export const MATRIX_CLUSTER_DIR =
  process.env['FAKEGPU_E2E_MATRIX_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-matrix-cluster');
export const MATRIX_NODE = 'fakegpu-matrix-node';
/**
 * A DGX H100 with dynamic MIG: whole GPUs beside their partitions (an A100 publishes no whole GPU under
 * dynamic MIG, its MIG mode needing a reset), and a ConnectX NIC on each GPU's PCIe root.
 */
export const MATRIX_PROFILE = 'dgx-h100';
export const MATRIX_KWOK_NODES = 20;

/**
 * fakegpu from its Helm chart: the plugin's DaemonSet on the node, the fleet's Deployment for KWOK nodes.
 * With FAKEGPU_E2E_HELM=1, `e2eCluster` is this cluster too, so test/e2e's GPU-pod checks run against the
 * chart-installed plugin as they do against the host process.
 */
export const HELM_CLUSTER_DIR =
  process.env['FAKEGPU_E2E_HELM_CLUSTER_DIR'] ?? join(cacheRoot(), 'e2e-helm-cluster');
export const HELM_KWOK_NODES = 4;
export const E2E_HELM = process.env['FAKEGPU_E2E_HELM'] === '1';
const HELM_OPTIONS = { kwokNodes: HELM_KWOK_NODES, helm: true };

export function helmCluster(): Promise<Exports> {
  return sharedCluster({ dir: HELM_CLUSTER_DIR, nodeName: E2E_NODE, profile: E2E_PROFILE, ...HELM_OPTIONS });
}

export function e2eCluster(): Promise<Exports> {
  return sharedCluster({
    dir: E2E_CLUSTER_DIR,
    nodeName: E2E_NODE,
    profile: E2E_PROFILE,
    ...(E2E_HELM ? HELM_OPTIONS : {}),
  });
}

/**
 * The node plugin's HTTP endpoint (/healthz, /readyz, /metrics): the host process's, or with the chart
 * the plugin pod's, through the API server's pod proxy.
 */
export async function pluginHttp(e: Exports, path: string): Promise<{ status: number; text: string }> {
  if (!E2E_HELM) {
    const r = await fetch(`http://${PLUGIN_HTTP}${path}`);
    return { status: r.status, text: await r.text() };
  }
  const pod = mustKubectl(e, pluginPodQuery(E2E_NODE, '{.items[0].metadata.name}')).trim();
  const port = PLUGIN_HTTP.split(':')[1] ?? '';
  const r = kubectl(e, [
    'get',
    '--raw',
    `/api/v1/namespaces/${HELM_NAMESPACE}/pods/${pod}:${port}/proxy${path}`,
  ]);
  return { status: r.code === 0 ? 200 : 503, text: r.code === 0 ? r.out : r.err };
}

/** Gracefully, so the kubelet unprepares every claim before the next file allocates the GPUs again. */
export function cleanup(e: Exports): void {
  kubectl(e, ['delete', 'pods', '--all', '--wait=true', '--timeout=120s']);
  kubectl(e, ['delete', 'resourceclaims,resourceclaimtemplates', '--all']);
}

/**
 * A ResourceClaimTemplate in `default` of these requests; with `matchAttribute`, the `gpu` and `nic`
 * requests are constrained to one value of it.
 */
export function claimTemplate(name: string, requests: unknown[], matchAttribute?: string): unknown {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name, namespace: 'default' },
    spec: {
      spec: {
        devices: {
          requests,
          ...(matchAttribute ? { constraints: [{ requests: ['gpu', 'nic'], matchAttribute }] } : {}),
        },
      },
    },
  };
}

/** One request of `count` devices of a class, each CEL expression a selector, with extra fields. */
export function deviceRequest(
  name: string,
  deviceClassName: string,
  count: number,
  cel: string[] = [],
  extra: Record<string, unknown> = {},
): unknown {
  return {
    name,
    exactly: {
      deviceClassName,
      count,
      ...(cel.length > 0 ? { selectors: cel.map((expression) => ({ cel: { expression } })) } : {}),
      ...extra,
    },
  };
}

export interface PodSpec {
  name: string;
  /** Each container runs `command` (a shell line), by default SHOW. */
  containers: { name: string; claims: { name: string; request?: string }[]; command?: string }[];
  claims: ({ name: string; template: string } | { name: string; claim: string })[];
}

/** Each container prints what it sees, then stays up so restarts can be tested against it. */
export const SHOW =
  'echo "visible=$NVIDIA_VISIBLE_DEVICES"; nvidia-smi -L; ls /dev | grep nvidia | tr "\\n" " "; echo; sleep 3600';

export function podManifest(e: Exports, p: PodSpec): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: 'default' },
    spec: {
      terminationGracePeriodSeconds: 1,
      resourceClaims: p.claims.map((c) =>
        'template' in c
          ? { name: c.name, resourceClaimTemplateName: c.template }
          : { name: c.name, resourceClaimName: c.claim },
      ),
      containers: p.containers.map((c) => ({
        name: c.name,
        image: e.FAKEGPU_TEST_IMAGE,
        imagePullPolicy: 'Never',
        command: ['sh', '-c', c.command ?? SHOW],
        resources: { claims: c.claims },
      })),
    },
  };
}

export function apply(e: Exports, ...objects: unknown[]): void {
  mustKubectl(e, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
}

export async function running(e: Exports, pod: string, timeoutMs = 90_000): Promise<void> {
  await eventually(
    `pod ${pod} Running`,
    () => {
      const phase = kubectl(e, ['get', 'pod', pod, '-o', 'jsonpath={.status.phase}']).out;
      if (phase === 'Failed')
        throw new Error(`pod ${pod} failed: ${kubectl(e, ['describe', 'pod', pod]).out}`);
      return phase === 'Running' ? true : undefined;
    },
    timeoutMs,
  ).catch((err: unknown) => {
    throw new Error(
      `${err instanceof Error ? err.message : String(err)}\n${kubectl(e, ['describe', 'pod', pod]).out}`,
    );
  });
}

/** The UUIDs `nvidia-smi -L` lists, GPUs and MIG devices, in its order. */
function listedUuids(text: string): string[] {
  return [...text.matchAll(/\(UUID: ((?:GPU|MIG)-[0-9a-f-]+)\)/g)].map((m) => m[1] ?? '');
}

export interface Seen {
  visible: string[];
  listed: string[];
  devNodes: string[];
}

/** What a container printed: NVIDIA_VISIBLE_DEVICES, the UUIDs nvidia-smi -L lists, its /dev/nvidia* nodes. */
export async function seen(e: Exports, pod: string, container: string): Promise<Seen> {
  const out = await eventually(`output of ${pod}/${container}`, () => {
    const r = kubectl(e, ['logs', pod, '-c', container]);
    return r.code === 0 && r.out.includes('visible=') && r.out.split('\n').length >= 3 ? r.out : undefined;
  });
  const lines = out.split('\n');
  const visible = (lines.find((l) => l.startsWith('visible='))?.slice('visible='.length) ?? '')
    .split(',')
    .filter(Boolean);
  const listed = listedUuids(out);
  const devNodes = (lines.find((l) => l.startsWith('nvidia')) ?? '').trim().split(/\s+/).filter(Boolean);
  return { visible, listed, devNodes };
}

/**
 * What a running container sees now, asked through `kubectl exec`: the UUIDs `nvidia-smi -L` lists
 * and its /dev/nvidia* nodes. Unlike `seen`, which reads what it printed at start, this proves the
 * container's mounted views and device nodes are still there after restarts.
 */
export function seesNow(
  e: Exports,
  pod: string,
  container: string,
): { listed: string[]; devNodes: string[] } {
  const r = kubectl(e, [
    'exec',
    pod,
    '-c',
    container,
    '--',
    'sh',
    '-c',
    'nvidia-smi -L; echo "--"; ls /dev | grep nvidia',
  ]);
  // The marker shows the shell ran in the container; without it the exec itself failed (API server away).
  if (!r.out.includes('--\n')) throw new Error(`kubectl exec ${pod} failed: ${r.err.trim()}`);
  const [smi = '', dev = ''] = r.out.split('--\n');
  return {
    listed: listedUuids(smi),
    devNodes: dev.split(/\s+/).filter(Boolean),
  };
}

export type Attr = { string?: string; int?: number; bool?: boolean };

/** Each device allocated to a claim, with the attributes its slice publishes. */
export function allocatedDevices(
  e: Exports,
  claimName: string,
): { driver: string; name: string; attrs: Record<string, Attr> }[] {
  const claim = JSON.parse(mustKubectl(e, ['get', 'resourceclaim', claimName, '-o', 'json'])) as {
    status?: { allocation?: { devices: { results: { driver: string; device: string; pool: string }[] } } };
  };
  const slices = JSON.parse(mustKubectl(e, ['get', 'resourceslices', '-o', 'json'])) as {
    items: {
      spec: {
        driver: string;
        pool: { name: string };
        devices?: { name: string; attributes?: Record<string, Attr> }[];
      };
    }[];
  };
  return (claim.status?.allocation?.devices.results ?? []).map((r) => {
    const dev = slices.items
      .filter((s) => s.spec.pool.name === r.pool && s.spec.driver === r.driver)
      .flatMap((s) => s.spec.devices ?? [])
      .find((d) => d.name === r.device);
    return { driver: r.driver, name: r.device, attrs: dev?.attributes ?? {} };
  });
}

export function allocatedUuids(e: Exports, claimName: string): string[] {
  return allocatedDevices(e, claimName).map((d) => d.attrs['uuid']?.string ?? `unknown:${d.name}`);
}

/** The generated claim of a pod's template claim. */
export function podClaim(e: Exports, pod: string, name: string): string {
  return mustKubectl(e, [
    'get',
    'pod',
    pod,
    '-o',
    `jsonpath={.status.resourceClaimStatuses[?(@.name=="${name}")].resourceClaimName}`,
  ]);
}

/** A FailedScheduling event's message for a pod, once there is one. */
export function failedScheduling(e: Exports, pod: string): Promise<string> {
  return eventually(`a FailedScheduling event for ${pod}`, () => {
    const out = kubectl(e, [
      'get',
      'events',
      '--field-selector',
      `involvedObject.name=${pod},reason=FailedScheduling`,
      '-o',
      'jsonpath={.items[*].message}',
    ]).out;
    return out ? out : undefined;
  });
}
