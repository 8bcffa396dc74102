import { streamLog } from '../process/progress.js';
import { resolve as resolvePath } from 'node:path';
import { Argument, Command, Option } from 'commander';
import type { ClusterOptions, ComponentStatus } from '../local-cluster/cluster.js';
import { buildableReleases, DEFAULT_KUBERNETES_RELEASE, releaseOf } from '../local-cluster/releases.js';
import { MAX_FLEET_REPLICAS } from '../local-cluster/state.js';
import {
  DEFAULT_NODE,
  defaultClusterDir,
  clusterGates,
  INTEGRATIONS,
  RESTARTABLE,
  type Integration,
  type Restartable,
} from '../local-cluster/state.js';
import { FakegpuError, oneOf, show } from '../errors.js';
import { loadPools, type Pools } from '../fleet/pools.js';
import { KWOK_PARTITION_LABEL, MAX_KWOK_CONTROLLERS } from '../local-cluster/kwok-partition.js';
import { isProfileFile } from '../model/profile/load.js';
import { resolveProfile } from '../process/profile-file.js';
import { checkNodeName } from '../model/render.js';
import { nicNumaOption } from './commands.js';
import { intFlag, resolveGates } from './options.js';
import { DEFAULT_RELEASE } from '../model/device/release.js';
import { parseConsumableShares } from '../model/device/consumable-shares.js';
import { table } from './output.js';
import { GPU_OFFERS, type GpuOffer } from '../tools/karpenter/gpu-offer.js';
import {
  examples,
  examplesOf,
  kubernetesVersionFlag,
  kubernetesVersionOption,
  nodeNameOption,
} from './flags.js';

/**
 * KWOK nodes `cluster up` creates at most: 50,000 ran on a 2-core, 24 GiB machine (README, Performance),
 * ten times what Kubernetes is tested to; the cap only stops a typo from filling the machine.
 */
export const MAX_KWOK_NODES = 100_000;

/** How many KWOK nodes the pools list; each pool must list some, or the fleet would serve nothing of it. */
function poolNodeCount(pools: Pools, field: string): number {
  let n = 0;
  for (const [name, m] of pools.byName) {
    const count = m.nodes?.names?.length ?? m.nodes?.count;
    if (count === undefined)
      throw new FakegpuError(
        `${field}: pools.${name}.nodes`,
        'missing: give names or a count of the nodes to create',
      );
    n += count;
  }
  if (n > MAX_KWOK_NODES)
    throw new FakegpuError(field, `the pools list ${n} nodes; cluster up creates at most ${MAX_KWOK_NODES}`);
  return n;
}

// Lines on stderr; on a terminal, long work (KWOK nodes, taints) redraws one live line there.
const progress = streamLog('fakegpu: ', process.stderr);

export function clusterCommand(write: (s: string) => void): Command {
  const cluster = new Command('cluster').description(
    'a local Kubernetes built from upstream sources: etcd, API server, scheduler, controller manager, containerd, kubelet',
  );
  fakegpuFlags(
    kwokFlags(
      nodeFlags(
        cluster
          .command('up')
          .description('start the cluster (or reuse the running one) and print export lines for your shell'),
      ),
    ),
  ).action(async (f: UpFlags) => {
    const { clusterUp, exportLines } = await import('../local-cluster/cluster.js');
    const e = await clusterUp(upOptions(f));
    write(`${exportLines(e)}\n`);
  });
  examples(cluster, [
    'eval "$(fakegpu cluster up -p dgx-h100)"',
    'fakegpu cluster status',
    'fakegpu cluster down',
  ]);
  cluster
    .command('down')
    .description('stop every process of the cluster, unmount and remove its network bridge')
    .option('--dir <dir>', 'cluster directory', defaultClusterDir())
    .option('--purge', 'also delete the cluster directory (certificates, etcd data, logs)')
    .action(async (opts: { dir: string; purge?: boolean }) => {
      const { clusterDown } = await import('../local-cluster/cluster.js');
      await clusterDown({ dir: opts.dir, purge: opts.purge === true, log: progress });
    });
  cluster
    .command('restart')
    .description('stop one component and start it again, leaving pods and the rest running')
    .addArgument(new Argument('<component>', 'what to restart').choices(RESTARTABLE))
    .option('--dir <dir>', 'cluster directory', defaultClusterDir())
    .action(async (component: Restartable, opts: { dir: string }) => {
      const { clusterRestart } = await import('../local-cluster/cluster.js');
      await clusterRestart(opts.dir, component, progress);
    });
  cluster
    .command('status')
    .description('which components run, and where their logs are')
    .option('--dir <dir>', 'cluster directory', defaultClusterDir())
    .action(async (opts: { dir: string }) => {
      const { clusterStatus } = await import('../local-cluster/cluster.js');
      write(statusTable(clusterStatus(opts.dir)));
    });
  examplesOf(cluster, 'down', ['fakegpu cluster down', 'fakegpu cluster down --purge']);
  examplesOf(cluster, 'restart', ['fakegpu cluster restart kubelet']);
  examplesOf(cluster, 'status', ['fakegpu cluster status --dir /tmp/my-cluster']);
  return cluster;
}

interface UpFlags {
  dir: string;
  nodeName: string;
  kubernetesVersion: string;
  profile?: string;
  dynamicMig?: boolean;
  nicNumaAttribute: 'dranet' | 'standard';
  nics: boolean;
  featureGates?: string;
  consumableShares?: string;
  healthService?: boolean;
  kwokNodes: string;
  kwokControllers: string;
  kwokProfile?: string;
  kwokPools?: string;
  fleet: boolean;
  fleetReplicas: string;
  auditSlices?: boolean;
  helm?: boolean;
  with?: string;
  karpenterGpus?: GpuOffer;
}

/** The cluster's directory, its node and release, and the node plugin `--profile` runs on it. */
function nodeFlags(c: Command): Command {
  examples(c, [
    'eval "$(fakegpu cluster up -p dgx-h100)"',
    'fakegpu cluster up -p dgx-h100 --dynamic-mig --kwok-nodes 100 --kubernetes-version 1.35',
    'fakegpu cluster up --kwok-pools captured/pools.yaml',
    'fakegpu cluster up --kwok-nodes 5000 --kwok-controllers 5',
  ]);
  return c
    .option('--dir <dir>', 'cluster directory: state, certificates, logs', defaultClusterDir())
    .addOption(nodeNameOption('name of the node', { default: DEFAULT_NODE }))
    .addOption(
      kubernetesVersionOption(
        `the release to build and run (${buildableReleases()})`,
        DEFAULT_KUBERNETES_RELEASE,
      ),
    )
    .option(
      '-p, --profile <preset|file.yaml>',
      'also run the fakegpu node plugin for this machine on the node',
    )
    .addOption(
      new Option(
        '--dynamic-mig',
        'publish every MIG partition (the node plugin of --profile, and the fleet)',
      ),
    )
    .addOption(nicNumaOption())
    .option('--no-nics', "with --profile: the node plugin publishes no NIC slices (DRANET's)")
    .option(
      '--feature-gates <gates>',
      "NVIDIA's driver gates for the node plugin and the fleet, e.g. ConsumableShares=true (docs/feature-gates.md)",
    )
    .option(
      '--consumable-shares <mode>',
      "NVIDIA's consumable shares for the node plugin and the fleet ('disabled', 'memory', 'unlimited', or a positive integer); needs --feature-gates ConsumableShares=true",
    )
    .option(
      '--health-service',
      "with --profile and NVMLDeviceHealthCheck: the plugin serves the kubelet's DRAResourceHealth, so pod status shows device health",
    );
}

/** Simulated GPU nodes beside the real one. */
function kwokFlags(c: Command): Command {
  return c
    .option(
      '--kwok-nodes <n>',
      'also create this many simulated GPU nodes (KWOK), published by fakegpu fleet',
      '0',
    )
    .option(
      '--kwok-controllers <k>',
      `split the KWOK nodes between this many KWOK controllers, by the label ${KWOK_PARTITION_LABEL} (1 to ${MAX_KWOK_CONTROLLERS}, at most one per node; KWOK advises about 1,000 nodes per controller)`,
      '1',
    )
    .option(
      '--kwok-profile <preset|file.yaml>',
      'the machine of the KWOK nodes (default: --profile, else dgx-h100)',
    )
    .option(
      '--kwok-pools <pools.yaml>',
      'instead of --kwok-nodes: the KWOK nodes a FleetPools file lists (e.g. from fakegpu capture cluster), served by the fleet with those pools',
    )
    .option('--no-fleet', 'KWOK nodes without fakegpu fleet: publish their slices yourself')
    .option(
      '--fleet-replicas <n>',
      `fleet replicas that split the KWOK nodes between them by shard Leases (fakegpu fleet --shards), 1 to ${String(MAX_FLEET_REPLICAS)}`,
      '1',
    )
    .option(
      '--audit-slices',
      "the API server logs every ResourceSlice write, with the slice and the writer's user agent, to logs/audit.log (JSON lines)",
    );
}

/** How fakegpu runs, and the projects beside it. */
function fakegpuFlags(c: Command): Command {
  return c
    .option(
      '--helm',
      "install fakegpu with its Helm chart (deploy/helm/fakegpu) from its image, built here and imported into the node's containerd, instead of running it as host processes; starts kube-proxy for the pods' API access",
    )
    .option(
      '--with <projects>',
      `upstream projects to build from their Go modules and run beside the cluster, comma-separated: ${INTEGRATIONS.join(', ')}`,
    )
    .addOption(
      new Option(
        '--karpenter-gpus <offer>',
        "with --with karpenter, how its nodes offer their GPUs: 'dra' (the default: as DRA devices only, and Karpenter's DRA allocator places claim pods from each instance type's templates) or 'extended-resource' (as nvidia.com/gpu, Karpenter ignoring DRA requests; the fleet serves none of its nodes)",
      ).choices(GPU_OFFERS),
    );
}

/** Every flag of `up` checked, before anything starts. */
function upOptions(f: UpFlags): ClusterOptions {
  const integrations = parseIntegrations(f.with);
  if (integrations.length > 0 && !f.fleet)
    throw new FakegpuError(
      '--no-fleet',
      "leave it out with --with: the fleet gives an autoscaler's nodes their GPUs",
    );
  if (f.karpenterGpus !== undefined && !integrations.includes('karpenter'))
    throw new FakegpuError('--karpenter-gpus', `${show(f.karpenterGpus)} needs --with karpenter`);
  kubernetesVersionFlag(f.kubernetesVersion);
  const release = releaseOf(f.kubernetesVersion, '--kubernetes-version');
  const kwokNodes = kwokNodeCount(f);
  checkPluginFlags(f, kwokNodes > 0 || integrations.includes('karpenter'));
  return {
    dir: f.dir,
    nodeName: checkNodeName(f.nodeName, '--node-name'),
    release,
    // The plugin runs in its own process: a profile file must not depend on this shell's directory.
    profile: f.profile !== undefined && isProfileFile(f.profile) ? resolvePath(f.profile) : f.profile,
    dynamicMig: f.dynamicMig === true,
    nicNumaAttribute: f.nicNumaAttribute,
    nics: f.nics,
    pluginGates: f.featureGates,
    consumableShares: f.consumableShares,
    healthService: f.healthService === true,
    kwokNodes,
    kwokControllers: kwokControllerCount(f, kwokNodes, integrations),
    kwokProfile:
      f.kwokProfile !== undefined && isProfileFile(f.kwokProfile)
        ? resolvePath(f.kwokProfile)
        : f.kwokProfile,
    kwokFleet: f.fleet,
    fleetReplicas: fleetReplicaCount(f, kwokNodes),
    auditSlices: f.auditSlices === true,
    kwokPools: f.kwokPools === undefined ? undefined : resolvePath(f.kwokPools),
    with: integrations,
    ...(f.karpenterGpus !== undefined ? { karpenterGpus: f.karpenterGpus } : {}),
    helm: f.helm === true,
    log: progress,
  };
}

/** `--fleet-replicas`: several only where a fleet runs. */
function fleetReplicaCount(f: UpFlags, kwokNodes: number): number {
  const n = intFlag(f.fleetReplicas, '--fleet-replicas', 1, MAX_FLEET_REPLICAS);
  if (n > 1 && (!f.fleet || kwokNodes === 0))
    throw new FakegpuError(
      '--fleet-replicas',
      `${String(n)} needs the fleet: give --kwok-nodes, without --no-fleet`,
    );
  return n;
}

/** `--kwok-nodes`, or as many as `--kwok-pools` lists. */
function kwokNodeCount(f: UpFlags): number {
  let kwokNodes = intFlag(f.kwokNodes, '--kwok-nodes', 0, MAX_KWOK_NODES);
  if (f.kwokPools !== undefined) {
    if (kwokNodes > 0 || f.kwokProfile !== undefined)
      throw new FakegpuError(
        '--kwok-pools',
        `the pools list their nodes and machines; leave out ${kwokNodes > 0 ? '--kwok-nodes' : '--kwok-profile'}`,
      );
    kwokNodes = poolNodeCount(loadPools(f.kwokPools, '--kwok-pools'), '--kwok-pools');
  }
  if (f.kwokProfile !== undefined) {
    if (kwokNodes === 0) throw new FakegpuError('--kwok-profile', 'needs --kwok-nodes');
    resolveProfile(f.kwokProfile);
  }
  if (!f.fleet && kwokNodes === 0) throw new FakegpuError('--no-fleet', 'needs --kwok-nodes');
  return kwokNodes;
}

/** `--kwok-controllers`: each controller needs nodes of its own, and an autoscaler's nodes carry no partition. */
function kwokControllerCount(f: UpFlags, kwokNodes: number, integrations: Integration[]): number {
  const k = intFlag(f.kwokControllers, '--kwok-controllers', 1, MAX_KWOK_CONTROLLERS);
  if (k > 1 && kwokNodes === 0)
    throw new FakegpuError('--kwok-controllers', 'needs --kwok-nodes or --kwok-pools');
  if (k > 1 && k > kwokNodes)
    throw new FakegpuError(
      '--kwok-controllers',
      `${k} controllers for ${kwokNodes} KWOK node(s); give 1 to ${Math.min(kwokNodes, MAX_KWOK_CONTROLLERS)}, at most one per node`,
    );
  if (k > 1 && integrations.includes('karpenter'))
    throw new FakegpuError(
      '--kwok-controllers',
      `${k} with --with karpenter: the nodes Karpenter launches carry no ${KWOK_PARTITION_LABEL} label, so no controller would manage them; give 1`,
    );
  return k;
}

/**
 * The node plugin's settings need the plugin, and the health service needs the gate whose events it
 * serves.
 */
function checkPluginFlags(f: UpFlags, fleetNodes: boolean): void {
  // The fleet renders MIG partitions too: for KWOK nodes (and Karpenter's) a plugin is not needed.
  if (f.dynamicMig && f.profile === undefined && !fleetNodes) {
    throw new FakegpuError(
      '--dynamic-mig',
      'needs --profile or KWOK nodes (--kwok-nodes, --kwok-pools, --with karpenter): it is a setting of the node plugin and the fleet',
    );
  }
  // Check the profile before starting anything, so a typo costs nothing.
  if (f.profile !== undefined) resolveProfile(f.profile);
  if (f.healthService && f.profile === undefined)
    throw new FakegpuError(
      '--health-service',
      'needs --profile: it is a setting of the node plugin that --profile starts',
    );
  // The gates as the plugin will get them, the demo's own included, under the user's flag.
  const gates = resolveGates(
    clusterGates({ dynamicMig: f.dynamicMig === true, pluginGates: f.featureGates }),
    DEFAULT_RELEASE,
    f.dynamicMig === true,
    '--feature-gates',
  );
  if (f.healthService && !gates.NVMLDeviceHealthCheck)
    throw new FakegpuError(
      '--health-service',
      'needs --feature-gates NVMLDeviceHealthCheck=true: health is what its monitor finds',
    );
  // Refused here in NVIDIA's words rather than by the plugin and the fleet once started.
  parseConsumableShares(f.consumableShares, gates);
}

function statusTable(s: ComponentStatus[]): string {
  return table(
    ['COMPONENT', 'STATE', 'PID', 'LOG'],
    s.map((c) => [c.name, c.running ? 'running' : 'stopped', c.pid === null ? '-' : String(c.pid), c.log]),
  );
}

/** `--with karpenter,…`: each a project `cluster up` knows how to run, once. */
export function parseIntegrations(v: string | undefined): Integration[] {
  if (v === undefined) return [];
  const out: Integration[] = [];
  for (const raw of v.split(',')) {
    const x = raw.trim();
    const known = INTEGRATIONS.find((i) => i === x);
    if (known === undefined)
      throw new FakegpuError('--with', `unknown project ${show(x)}; known: ${oneOf(INTEGRATIONS)}`);
    if (!out.includes(known)) out.push(known);
  }
  return out;
}
