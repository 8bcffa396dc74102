export { resolveGates } from '../model/feature-gates/parse.js';
import { lookup } from 'node:dns/promises';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isIP } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { checkNamespace, isDnsSubdomain } from '../kube/types/names.js';
import { type Command, Option } from 'commander';
import { DEFAULT_DRIVER_NAMESPACE } from '../model/compute-domain/resource.js';
import { DEFAULT_RELEASE, RELEASES } from '../model/device/release.js';
import { clip, FakegpuError, show } from '../errors.js';
import { parseEndpoint } from '../process/endpoint.js';
import { checkSmallFile, MiB } from '../process/files.js';
import { DCGM_EXPORTER_VERSION, styleOf } from '../model/dcgm/version.js';
import type { Style } from '../model/dcgm/exposition.js';
import { DRIVER_NAME } from '../model/slice/build.js';

import { kubernetesVersionOption } from './flags.js';

export { DEFAULT_KUBERNETES_VERSION } from './flags.js';

/** A flag that can also come from an environment variable, as in NVIDIA's chart and ours. */
export function envOption(flags: string, desc: string, env: string, dflt?: string): Option {
  const o = new Option(flags, desc).env(env);
  return dflt === undefined ? o : o.default(dflt);
}

/** An integer flag within bounds, refused with the flag, the value and the range. */
export function intFlag(text: string, flag: string, min: number, max?: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || (max !== undefined && n > max)) {
    throw new FakegpuError(
      flag,
      `${show(text)} is not an integer ${max === undefined ? `>= ${min}` : `from ${min} to ${max}`}`,
    );
  }
  return n;
}

/** The driver flags the node plugin and the fleet share, from the same environment as NVIDIA's chart. */
/** `--no-compute-domains`, said of what the command plays of NVIDIA's compute-domain side. */
export function noComputeDomainsOption(what: string): Option {
  return new Option(
    '--no-compute-domains',
    `do not ${what} on machines with NVLink fabric (GB200, GB300)`,
  ).env('FAKEGPU_NO_COMPUTE_DOMAINS');
}

/** Where ComputeDomainCliques and the IMEX daemons' pods live (in a pod: its own namespace). */
export function driverNamespaceOption(what = 'ComputeDomainCliques and IMEX daemon pods live there'): Option {
  return envOption(
    '--driver-namespace <ns>',
    `the driver's namespace: ${what}`,
    'POD_NAMESPACE',
    DEFAULT_DRIVER_NAMESPACE,
  );
}

export function dynamicMigOption(): Option {
  return new Option('--dynamic-mig', 'publish every MIG partition (DynamicMIG)').env('FAKEGPU_DYNAMIC_MIG');
}

export function driverNameOption(): Option {
  return envOption('--driver-name <name>', 'DRA driver name', 'DRIVER_NAME', DRIVER_NAME);
}

/** The API server version slices are laid out for, where no server is asked (render, diff, export). */
export function layoutVersionOption(): Option {
  return kubernetesVersionOption('the API server the slices are laid out for');
}

const RELEASE_HELP = `NVIDIA DRA driver release to emulate (${Object.keys(RELEASES).join(', ')})`;

/** `driverReleaseOption` without its environment variable, for commands that only print. */
export function releaseChoiceOption(): Option {
  // Checked by parseRelease, not commander's choices: "main" deserves its own answer.
  return new Option('--dra-driver-release <release>', RELEASE_HELP).default(DEFAULT_RELEASE);
}

export function driverReleaseOption(): Option {
  return envOption(
    '--dra-driver-release <release>',
    RELEASE_HELP,
    'FAKEGPU_DRA_DRIVER_RELEASE',
    DEFAULT_RELEASE,
  );
}

/**
 * An HTTP endpoint flag checked before anything starts: a port of digits (`Number` would take `1e3`), a
 * host that is empty, an IP address or a name that resolves. The server itself only learns of a bad host
 * from an 'error' event after the plugin or fleet is already up.
 */
export async function checkEndpoint(text: string, field: string): Promise<void> {
  const usage = `${show(text)} is not host:port, e.g. "127.0.0.1:51516" or ":51516"`;
  const e = parseEndpoint(text);
  if (!e) throw new FakegpuError(field, `${usage}: the port must be a number from 0 to 65535`);
  const host = e.host;
  if (host === '' || isIP(host) !== 0) return;
  if (!isDnsSubdomain(host.toLowerCase())) {
    throw new FakegpuError(
      field,
      `${usage}: the host must be empty, an IP address (IPv6 without brackets) or a host name`,
    );
  }
  try {
    await lookup(host);
  } catch (e) {
    const why = e instanceof Error && 'code' in e ? String(e.code) : 'no address';
    throw new FakegpuError(field, `${usage}: the host ${show(host)} does not resolve (${why})`);
  }
}

/** Where a pod's service account token is mounted: the client's in-cluster configuration needs it. */
const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * The kubeconfig the plugin or fleet will use, loaded before anything starts: the client would otherwise
 * throw its own error, with a stack trace, once sockets are open. Without a file the client looks for
 * ~/.kube/config, then in-cluster credentials, and else quietly picks http://localhost:8080, which it then
 * refuses to talk to.
 */
const KUBECONFIG_LIMIT = { bytes: 16 * MiB, what: 'a kubeconfig' };

export async function checkKubeconfig(path: string | undefined, field: string): Promise<void> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (path === undefined) {
    // The client's own default: KUBECONFIG's files, else ~/.kube/config; each read whole, so each bounded.
    const defaults = (process.env['KUBECONFIG'] ?? '').split(':').filter((p) => p !== '');
    for (const p of defaults.length > 0 ? defaults : [join(homedir(), '.kube', 'config')])
      checkSmallFile(p, `${field} (default ${show(p)})`, KUBECONFIG_LIMIT);
    if (!existsSync(join(homedir(), '.kube', 'config')) && !existsSync(IN_CLUSTER_TOKEN)) {
      throw new FakegpuError(
        field,
        'no kubeconfig: not given, KUBECONFIG is unset, there is no ~/.kube/config and no in-cluster service account; give --kubeconfig <file>',
      );
    }
    return;
  }
  // The client reads the file itself, whole and more than once: only a small regular file is given it.
  checkSmallFile(path, field, KUBECONFIG_LIMIT);
  try {
    kc.loadFromFile(path);
  } catch (e) {
    if (e instanceof Error && 'code' in e) {
      throw new FakegpuError(field, `cannot read kubeconfig ${show(path)} (${String(e.code)})`);
    }
    throw new FakegpuError(
      field,
      `${show(path)} is not a kubeconfig: ${clip(e instanceof Error ? e.message : String(e))}`,
    );
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    const context = kc.getCurrentContext();
    const why = context
      ? `its current-context ${show(context)} is not a context with one of its clusters`
      : 'it sets no current-context';
    throw new FakegpuError(field, `${show(path)} names no cluster to use: ${why}`);
  }
  if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) {
    throw new FakegpuError(
      field,
      `${show(path)}: cluster ${show(cluster.name)} is served over plain HTTP (${show(cluster.server)}), which the Kubernetes client refuses unless insecure-skip-tls-verify is set`,
    );
  }
}

/** `--kubeconfig`, as every command that talks to an API server takes it. */
export function kubeconfigOption(): Option {
  return envOption('--kubeconfig <file>', 'kubeconfig (default: in-cluster or ~/.kube/config)', 'KUBECONFIG');
}

/** The kubeconfig checked as the plugin and fleet check theirs, then loaded. */
export async function loadKubeconfig(path: string | undefined, cmd: Command): Promise<KubeConfig> {
  await checkKubeconfig(path, sourceOf(cmd, 'kubeconfig', '--kubeconfig'));
  // Loaded here, not at the top: the client is most of start-up, and only commands that talk to a
  // cluster need it.
  const [{ KubeConfig }, { loadKubeconfigInto }] = await Promise.all([
    import('@kubernetes/client-node'),
    import('../kube/client.js'),
  ]);
  return loadKubeconfigInto(new KubeConfig(), path);
}

/** Where an option's value came from, for messages: the flag, or the environment variable that set it. */
export function sourceOf(cmd: Command, key: string, flag: string): string {
  const option = cmd.options.find((o) => o.attributeName() === key);
  return cmd.getOptionValueSource(key) === 'env' && option?.envVar ? option.envVar : flag;
}

/**
 * NVIDIA's `--feature-gates` (env `FEATURE_GATES` where a process runs, as NVIDIA's plugin reads it).
 * Commands that only print take the flag alone.
 */
export function featureGatesOption(envVar?: string): Option {
  const o = new Option(
    '--feature-gates <gates>',
    "NVIDIA's driver gates, e.g. NVMLDeviceHealthCheck=true,ConsumableShares=true (docs/feature-gates.md)",
  );
  return envVar ? o.env(envVar).default('') : o.default('');
}

/**
 * NVIDIA's `--consumable-shares` (env `CONSUMABLE_SHARES` where a process runs), usage text verbatim
 * from NVIDIA v0.5.0 cmd/gpu-kubelet-plugin/main.go.
 */
export function consumableSharesOption(envVar?: string): Option {
  const o = new Option(
    '--consumable-shares <mode>',
    "Configure consumable shares support ('disabled', 'memory', 'unlimited', or a positive integer).",
  );
  return (envVar ? o.env(envVar) : o).default('disabled');
}

/** dcgm-exporter's endpoint, on the plugin and the fleet alike; `what` says whose GPUs it serves. */
export function dcgmEndpointOption(what: string): Option {
  return envOption(
    '--dcgm-endpoint <host:port>',
    `${what} GPU metrics as dcgm-exporter serves them (its port is 9400), at /metrics; empty to disable`,
    'DCGM_ENDPOINT',
    '',
  );
}

export function dcgmVersionOption(): Option {
  return envOption(
    '--dcgm-exporter-version <version>',
    'the dcgm-exporter release whose exposition to serve (3.x to 4.8.x)',
    'DCGM_EXPORTER_VERSION',
    DCGM_EXPORTER_VERSION,
  );
}

/**
 * What a process serving GPU metrics reaches beyond itself, checked before it starts: its probe and
 * metrics endpoints, the dcgm-exporter it imitates, its kubeconfig. Answers the exporter's style.
 */
export async function checkServingFlags(
  f: {
    httpEndpoint: string;
    dcgmEndpoint: string;
    dcgmExporterVersion: string;
    kubeconfig?: string | undefined;
  },
  cmd: Command,
): Promise<Style> {
  if (f.httpEndpoint) await checkEndpoint(f.httpEndpoint, sourceOf(cmd, 'httpEndpoint', '--http-endpoint'));
  if (f.dcgmEndpoint) await checkEndpoint(f.dcgmEndpoint, sourceOf(cmd, 'dcgmEndpoint', '--dcgm-endpoint'));
  const style = styleOf(
    f.dcgmExporterVersion,
    sourceOf(cmd, 'dcgmExporterVersion', '--dcgm-exporter-version'),
  );
  await checkKubeconfig(f.kubeconfig, sourceOf(cmd, 'kubeconfig', '--kubeconfig'));
  return style;
}

/** The flags of leader election, as the fleet and the ComputeDomain controller take them. */
export interface LeaderElectionFlags {
  leaderElect: string;
  leaderElectionNamespace: string;
  leaderElectionLeaseName: string;
}

/**
 * `--leader-elect` and where its Lease lives: replicas beyond the leader (a Deployment's extra ones, a
 * rollout's new pod) stand by instead of writing beside it. The identity is the pod's name (its host
 * name) and a random suffix, made when the process starts.
 */
export function leaderElectionOptions(c: Command, lease: string): Command {
  return c
    .addOption(
      envOption(
        '--leader-elect <true|false>',
        'work only while holding a coordination.k8s.io Lease, so that other replicas stand by',
        'FAKEGPU_LEADER_ELECT',
        'true',
      ),
    )
    .addOption(
      envOption(
        '--leader-election-namespace <ns>',
        "the Lease's namespace (the chart sets the pod's own)",
        'FAKEGPU_LEADER_ELECTION_NAMESPACE',
        'kube-system',
      ),
    )
    .addOption(
      envOption(
        '--leader-election-lease-name <name>',
        "the Lease's name; replicas of one writer share it",
        'FAKEGPU_LEADER_ELECTION_LEASE_NAME',
        lease,
      ),
    );
}

/** The election the flags ask for, checked; undefined: `--leader-elect=false`. */
export function checkLeaderElection(
  f: LeaderElectionFlags,
  cmd: Command,
): { namespace: string; name: string } | undefined {
  const elect = f.leaderElect.trim().toLowerCase();
  if (elect !== 'true' && elect !== 'false')
    throw new FakegpuError(
      sourceOf(cmd, 'leaderElect', '--leader-elect'),
      `${show(f.leaderElect)} is not a boolean; expected true or false`,
    );
  const namespace = checkNamespace(
    f.leaderElectionNamespace,
    sourceOf(cmd, 'leaderElectionNamespace', '--leader-election-namespace'),
  );
  const name = f.leaderElectionLeaseName;
  if (!isDnsSubdomain(name))
    throw new FakegpuError(
      sourceOf(cmd, 'leaderElectionLeaseName', '--leader-election-lease-name'),
      `${show(name)} is not a valid Lease name; expected an RFC 1123 subdomain (lower-case a-z, 0-9, '-' and '.', at most 253 characters)`,
    );
  return elect === 'true' ? { namespace, name } : undefined;
}

/**
 * NVIDIA's `-v` (env `LOG_VERBOSITY`, as its chart sets it): klog's verbosity. fakegpu logs through pino,
 * whose levels are coarser; what NVIDIA logs from V(6) on (its requests' detail) is pino's debug.
 */
export function logVerbosityOption(): Option {
  return envOption(
    '--v <level>',
    "log verbosity as NVIDIA's klog counts it (0-10); debug from 6",
    'LOG_VERBOSITY',
    '4',
  );
}

export function logLevelOf(text: string, cmd: Command): 'info' | 'debug' {
  return intFlag(text.trim(), sourceOf(cmd, 'v', '--v'), 0, 10) >= 6 ? 'debug' : 'info';
}
