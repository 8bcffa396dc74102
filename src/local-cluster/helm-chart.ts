import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DEFAULT_DRIVER_NAMESPACE } from '../model/compute-domain/resource.js';
import { FakegpuError } from '../errors.js';
import { isProfileFile } from '../model/profile/load.js';
import type { Toolchain } from './build.js';
import type { Layout } from './config.js';
import { buildFakegpuImage, FAKEGPU_IMAGE } from './fakegpu-image.js';
import { FLEET_HTTP } from './fleet-process.js';
import { karpenterFleet } from './karpenter-process.js';
import { kubectl } from './kubectl.js';
import { defaultRelease, type KubernetesRelease } from './releases.js';
import { clusterGates } from './state.js';
import { kwokRuns, KWOK_DEFAULT_PROFILE, type State } from './state.js';

/**
 * `cluster up --helm`: fakegpu as users install it, from `deploy/helm/fakegpu` with `helm`, running from
 * its image in the node's containerd (built here, imported without a registry) instead of as host
 * processes. The values are the host processes' flags in the chart's words, written to the cluster's
 * config directory so `helm upgrade` can start from them.
 */

export const HELM_RELEASE = 'fakegpu';
export const HELM_NAMESPACE = DEFAULT_DRIVER_NAMESPACE;
/** The chart's DaemonSet runs on nodes with this label (its default `nodeSelector`). */
export const PLUGIN_NODE_LABEL = 'fakegpu.dev/enabled';
export const CHART_DIR = 'deploy/helm/fakegpu';
/** The fleet's HTTP port in its pod: the chart's `fleet.httpPort`, the host process's too. */
const CHART_FLEET_PORT = FLEET_HTTP.split(':')[1] ?? '';

const [imageRepository, imageTag] = FAKEGPU_IMAGE.split(':') as [string, string];

/**
 * What --helm cannot do, each in one line: a profile file on this machine is not in the image (the chart
 * takes preset names), and kube-proxy is built for the default release only.
 */
export function refuseForHelm(
  s: Pick<State, 'profile' | 'kwokProfile' | 'kwokPools'> & { release: KubernetesRelease },
): void {
  if (s.release.version !== defaultRelease().version)
    throw new FakegpuError(
      '--kubernetes-version',
      `--helm runs kube-proxy, which is built for Kubernetes ${defaultRelease().version} only; leave out --helm for ${s.release.version}`,
    );
  if (s.profile !== null && isProfileFile(s.profile))
    throw new FakegpuError(
      '--profile',
      `${JSON.stringify(s.profile)} is a file; with --helm the chart's pods take a preset name (fakegpu profiles lists them)`,
    );
  if (s.kwokProfile && isProfileFile(s.kwokProfile))
    throw new FakegpuError(
      '--kwok-profile',
      `${JSON.stringify(s.kwokProfile)} is a file; with --helm the fleet's pod takes a preset name (fakegpu profiles lists them)`,
    );
  if (s.kwokPools)
    throw new FakegpuError(
      '--kwok-pools',
      "with --helm the chart's fleet.pools value holds the pools; --kwok-pools works without --helm",
    );
}

/** The chart's values for this cluster: what `startPlugin` and `startFleet` pass as flags. */
export function helmValues(l: Layout, s: State): Record<string, unknown> {
  const fleet = kwokRuns(s) && s.kwokFleet !== false;
  return {
    image: { repository: imageRepository, tag: imageTag, pullPolicy: 'Never' },
    profile: s.profile ?? KWOK_DEFAULT_PROFILE,
    dynamicMig: s.dynamicMig,
    nics: { enabled: s.nics !== false, numaAttribute: s.nicNumaAttribute ?? 'dranet' },
    featureGates: clusterGates(s),
    ...(s.consumableShares ? { consumableShares: s.consumableShares } : {}),
    kubeletPluginsDir: join(l.kubeletRoot, 'plugins'),
    kubeletRegistrarDir: join(l.kubeletRoot, 'plugins_registry'),
    cdiRoot: l.cdiDir,
    plugin: { healthService: s.healthService === true },
    resources: { computeDomains: { enabled: s.computeDomains === true } },
    // No GPU Feature Discovery here: the plugin sets the clique label in its place, as on the host.
    computeDomains: { gpuCliqueLabel: s.computeDomains === true },
    fleet: {
      enabled: fleet,
      profile: s.kwokProfile ?? KWOK_DEFAULT_PROFILE,
      ...fleetForKarpenter(s),
      ...((s.fleetReplicas ?? 1) > 1 ? { replicas: s.fleetReplicas } : {}),
    },
  };
}

/** The fleet's values for Karpenter's nodes, as the host process gets them as flags. */
function fleetForKarpenter(s: State): Record<string, unknown> {
  const k = karpenterFleet(s);
  return { ...(k.nics ? { nics: true } : {}), ...(k.nodeSelector ? { nodeSelector: k.nodeSelector } : {}) };
}

export function helmValuesFile(l: Layout): string {
  return join(l.configDir, 'helm-values.yaml');
}

/** `helm` as the cluster's admin, with its caches in the cluster directory. */
export function helm(l: Layout, t: Toolchain, args: string[]): { code: number; out: string; err: string } {
  const home = join(l.dir, 'helm');
  const r = spawnSync(join(t.bin, 'helm'), [`--kubeconfig=${l.adminKubeconfig}`, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: r.status ?? 1, out: r.stdout, err: r.stderr || String(r.error ?? '') };
}

/** fakegpu's image built from this checkout, as an archive for the node's containerd to import. */
export function fakegpuImageArchive(log: (line: string) => void): string {
  log(`building ${FAKEGPU_IMAGE} from this checkout`);
  return buildFakegpuImage(log).archive;
}

/**
 * Installs (or upgrades to) the chart with this cluster's values and waits for its pods: the plugin
 * registered with the kubelet (its readiness), the node's slices published, the fleet's pod Ready.
 */
export function installChart(
  l: Layout,
  t: Toolchain,
  s: State,
  root: string,
  log: (line: string) => void,
): void {
  if (s.profile !== null) {
    const r = kubectl(l, t.bin, ['label', 'node', s.nodeName, `${PLUGIN_NODE_LABEL}=true`, '--overwrite']);
    if (r.code !== 0)
      throw new FakegpuError('cluster up', `labelling node ${s.nodeName} failed: ${r.err.trim()}`);
  }
  const values = helmValuesFile(l);
  mkdirSync(l.configDir, { recursive: true });
  writeFileSync(values, stringify(helmValues(l, s)));
  log(`helm upgrade --install ${HELM_RELEASE} ${CHART_DIR} -n ${HELM_NAMESPACE} -f ${values}`);
  const r = helm(l, t, [
    'upgrade',
    '--install',
    HELM_RELEASE,
    join(root, CHART_DIR),
    '--namespace',
    HELM_NAMESPACE,
    '--create-namespace',
    '-f',
    values,
    '--wait',
    '--timeout',
    '5m',
  ]);
  if (r.code !== 0)
    throw new FakegpuError(
      'helm',
      `installing the chart failed: ${r.err.trim()}; its pods: ${podsSummary(l, t)} (kubectl -n ${HELM_NAMESPACE} logs <pod>)`,
    );
}

/** Each of the release's pods with its phase and why a container waits: what a failed install shows. */
function podsSummary(l: Layout, t: Toolchain): string {
  const r = kubectl(l, t.bin, [
    'get',
    'pods',
    '-n',
    HELM_NAMESPACE,
    '-o',
    'jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.status.containerStatuses[*].state.waiting.reason}{";"}{end}',
  ]);
  const pods = r.out
    .split(';')
    .map((p) => p.trim())
    .filter(Boolean);
  return r.code !== 0 ? r.err.trim() : pods.length === 0 ? 'none' : pods.join(', ');
}

/**
 * Every fleet pod's /readyz (each has published the nodes it serves), through the API server's pod
 * proxy: one pod, or `replicas` of a sharded fleet.
 */
export function chartFleetReady(l: Layout, t: Toolchain, replicas = 1): boolean {
  const pods = kubectl(
    l,
    t.bin,
    chartPodQuery('fakegpu-fleet', 'status.phase=Running', '{.items[*].metadata.name}'),
  );
  const names = pods.out.trim().split(/\s+/).filter(Boolean);
  if (pods.code !== 0 || names.length !== replicas) return false;
  return names.every((name) => {
    const r = kubectl(l, t.bin, [
      'get',
      '--raw',
      `/api/v1/namespaces/${HELM_NAMESPACE}/pods/${name}:${CHART_FLEET_PORT}/proxy/readyz`,
    ]);
    return r.code === 0 && r.out.trim() === 'ok';
  });
}

/**
 * Whether the node's plugin pod is Ready, i.e. registered with the kubelet (its readiness probe). Helm's
 * --wait does not say: with the DaemonSet's maxUnavailable of 100% it expects no pod to be ready.
 */
export function chartPluginReady(l: Layout, t: Toolchain, node: string): () => Promise<boolean> {
  return () => {
    const r = kubectl(
      l,
      t.bin,
      pluginPodQuery(node, '{.items[*].status.conditions[?(@.type=="Ready")].status}'),
    );
    return Promise.resolve(r.code === 0 && r.out.trim() === 'True');
  };
}

/** `kubectl` arguments that print `jsonpath` of the release's pods of app `name` (the chart's label). */
export function chartPodQuery(name: string, fieldSelector: string, jsonpath: string): string[] {
  return [
    'get',
    'pods',
    '-n',
    HELM_NAMESPACE,
    '-l',
    `app.kubernetes.io/name=${name},app.kubernetes.io/instance=${HELM_RELEASE}`,
    `--field-selector=${fieldSelector}`,
    '-o',
    `jsonpath=${jsonpath}`,
  ];
}

/** The same for the release's plugin pod on `node`. */
export function pluginPodQuery(node: string, jsonpath: string): string[] {
  return chartPodQuery('fakegpu', `spec.nodeName=${node}`, jsonpath);
}
