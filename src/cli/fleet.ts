import { Command, Option } from 'commander';
import { FakegpuError, show } from '../errors.js';
import { checkNamespace } from '../kube/types/names.js';
import { parseRelease, type DriverRelease } from '../model/device/release.js';
import type { FeatureGates } from '../model/feature-gates/gates.js';
import { parseConsumableShares, type ConsumableShares } from '../model/device/consumable-shares.js';
import { checkIgnoredXids, ignoredXids } from '../model/health/taints.js';
import { loadPools } from '../fleet/pools.js';
import type { FleetRunOptions } from '../fleet/run.js';
import { DRANET } from '../model/nic/attributes.js';
import { parseKubernetesVersion } from '../kube/types/version.js';
import { resolveProfile } from '../process/profile-file.js';
import { renderSlices } from '../model/render.js';
import { checkDriverName, DEFAULT_KUBERNETES_VERSION } from './commands.js';
import {
  checkKubeconfig,
  checkLeaderElection,
  checkServingFlags,
  dcgmEndpointOption,
  dcgmVersionOption,
  driverNameOption,
  driverNamespaceOption,
  driverReleaseOption,
  dynamicMigOption,
  featureGatesOption,
  consumableSharesOption,
  resolveGates,
  envOption,
  intFlag,
  kubeconfigOption,
  leaderElectionOptions,
  noComputeDomainsOption,
  sourceOf,
  type LeaderElectionFlags,
} from './options.js';
import { examples } from './flags.js';

interface Flags {
  nodeSelector?: string;
  profileLabel: string;
  profile?: string;
  pools?: string;
  dynamicMig?: boolean;
  driverName: string;
  draDriverRelease: string;
  featureGates: string;
  consumableShares: string;
  nics?: boolean;
  computeDomains: boolean;
  driverNamespace: string;
  nicDriverName: string;
  concurrency: string;
  qps: string;
  burst: string;
  requestTimeout: string;
  kubeconfig?: string;
  httpEndpoint: string;
  dcgmEndpoint: string;
  dcgmExporterVersion: string;
  additionalXidsToIgnore: string;
  faults: boolean;
  deleteSlices?: boolean;
  shards: string;
}

type FleetFlags = Flags & LeaderElectionFlags;

/**
 * NICs stay off by default here, unlike in render and the plugin: the chart (fleet.nics), `cluster up` and
 * the benchmark rely on it. `--no-nics` is accepted as everywhere else, so the flag works the same way on
 * every command.
 */
function noNicsOption(): Option {
  return new Option('--no-nics', 'publish GPUs only (the default)').env('FAKEGPU_NO_NICS');
}

/** Which nodes are served, with which machines and drivers. */
function servedFlags(c: Command): Command {
  return c
    .addOption(
      envOption(
        '--node-selector <labels>',
        'label selector of the KWOK-managed nodes to serve (default: all of them; a node KWOK does not manage is never served, it may run the plugin)',
        'FAKEGPU_NODE_SELECTOR',
      ),
    )
    .addOption(
      envOption(
        '--profile-label <key>',
        "node label naming a node's profile",
        'FAKEGPU_PROFILE_LABEL',
        'fakegpu.dev/profile',
      ),
    )
    .addOption(
      envOption(
        '-p, --profile <preset|file.yaml>',
        'profile of selected nodes without the label',
        'FAKEGPU_PROFILE',
      ),
    )
    .addOption(
      envOption(
        '--pools <file.yaml>',
        'FleetPools file: the machine of each node pool, for nodes without the profile label',
        'FAKEGPU_POOLS',
      ),
    )
    .addOption(dynamicMigOption())
    .addOption(featureGatesOption('FEATURE_GATES'))
    .addOption(consumableSharesOption('CONSUMABLE_SHARES'))
    .addOption(driverNameOption())
    .addOption(driverReleaseOption())
    .addOption(new Option('--nics', "also publish the nodes' NICs as DRANET would").env('FAKEGPU_NICS'))
    .addOption(noNicsOption())
    .addOption(envOption('--nic-driver-name <name>', 'driver name of the NICs', 'NIC_DRIVER_NAME', DRANET))
    .addOption(
      noComputeDomainsOption(
        "play NVIDIA's compute-domain node side (slices, node labels, IMEX daemon entries)",
      ),
    )
    .addOption(driverNamespaceOption());
}

/** How hard the API server is driven, and which one. */
function clientFlags(c: Command): Command {
  return c
    .addOption(envOption('--concurrency <n>', 'nodes reconciled at once', 'FAKEGPU_FLEET_CONCURRENCY', '32'))
    .addOption(
      envOption(
        '--qps <n>',
        "client-side write rate limit, requests per second (0: none, the API server's priority and fairness paces writes)",
        'FAKEGPU_FLEET_QPS',
        '0',
      ),
    )
    .addOption(envOption('--burst <n>', 'write burst above --qps', 'FAKEGPU_FLEET_BURST', '400'))
    .addOption(
      envOption(
        '--request-timeout <seconds>',
        'deadline of each API request (watches excepted), after which it is retried',
        'FAKEGPU_FLEET_REQUEST_TIMEOUT',
        '30',
      ),
    )
    .addOption(kubeconfigOption())
    .addOption(
      envOption(
        '--shards <n>',
        'split the nodes between replicas in this many shards, each held through a Lease (0: one replica writes, the others stand by)',
        'FAKEGPU_FLEET_SHARDS',
        '0',
      ),
    );
}

/** The fleet's endpoints, its faults, and its clean-up mode. */
function serviceFlags(c: Command): Command {
  return c
    .addOption(
      envOption(
        '--http-endpoint <host:port>',
        '/healthz, /readyz (all nodes published) and /metrics; empty to disable',
        'HTTP_ENDPOINT',
        '127.0.0.1:51517',
      ),
    )
    .addOption(dcgmEndpointOption("every served node's"))
    .addOption(dcgmVersionOption())
    .addOption(
      envOption(
        '--additional-xids-to-ignore <xids>',
        'XIDs of injected faults tainted with effect None besides 13,31,43,45,68,109',
        'ADDITIONAL_XIDS_TO_IGNORE',
        '',
      ),
    )
    .addOption(
      new Option('--no-faults', "do not apply GpuFaults (fakegpu.dev) to the nodes' slices").env(
        'FAKEGPU_NO_FAULTS',
      ),
    )
    .addOption(
      new Option(
        '--delete-slices',
        "delete the slices a fleet of these flags publishes (its nodes', its drivers') and exit, as after uninstalling it; the running fleet leaves them in place",
      ).env('FAKEGPU_FLEET_DELETE_SLICES'),
    );
}

export function fleetCommand(): Command {
  const c = leaderElectionOptions(
    serviceFlags(
      clientFlags(
        servedFlags(
          new Command('fleet').description(
            "publish GPU ResourceSlices for many nodes without a plugin (KWOK's), one profile per node",
          ),
        ),
      ),
    ),
    'fakegpu-fleet',
  ).action(fleetAction);
  return examples(c, [
    'fakegpu fleet --kubeconfig ~/.kube/config -p dgx-h100',
    'fakegpu fleet --pools pools.yaml --node-selector type=kwok --nics',
    'fakegpu fleet --pools pools.yaml --delete-slices   # what uninstalling leaves',
  ]);
}

/** What both modes (serving, deleting slices) need, checked. */
interface Common {
  ignored: string;
  release: DriverRelease;
  gates: FeatureGates;
  consumableShares: ConsumableShares;
  driverName: string;
  driverNamespace: string;
  nics: { driverName: string; standardNumaNode: boolean } | undefined;
  concurrency: number;
  qps: number;
  burst: number;
  timeoutMs: number;
}

function checkCommon(f: Flags, cmd: Command): Common {
  const ignored = checkIgnoredXids(
    f.additionalXidsToIgnore,
    sourceOf(cmd, 'additionalXidsToIgnore', '--additional-xids-to-ignore'),
  );
  const release = parseRelease(f.draDriverRelease, '--dra-driver-release');
  const gates = resolveGates(
    f.featureGates,
    release,
    f.dynamicMig === true,
    sourceOf(cmd, 'featureGates', '--feature-gates'),
  );
  const consumableShares = parseConsumableShares(
    f.consumableShares,
    gates,
    sourceOf(cmd, 'consumableShares', '--consumable-shares'),
  );
  const driverName = checkDriverName(f.driverName, sourceOf(cmd, 'driverName', '--driver-name'));
  const driverNamespace = checkNamespace(
    f.driverNamespace,
    sourceOf(cmd, 'driverNamespace', '--driver-namespace'),
  );
  const nics = f.nics
    ? {
        driverName: checkDriverName(f.nicDriverName, sourceOf(cmd, 'nicDriverName', '--nic-driver-name')),
        standardNumaNode: false,
      }
    : undefined;
  return {
    ignored,
    release,
    gates,
    consumableShares,
    driverName,
    driverNamespace,
    nics,
    concurrency: intFlag(f.concurrency, '--concurrency', 1),
    qps: intFlag(f.qps, '--qps', 0),
    burst: intFlag(f.burst, '--burst', 1),
    // Node's timers hold at most 2^31-1 ms; past that a deadline would fire at once.
    timeoutMs: intFlag(f.requestTimeout, '--request-timeout', 1, 2_147_483) * 1000,
  };
}

async function deleteSlices(f: Flags, cmd: Command, c: Common): Promise<void> {
  // Only what selects nodes and names drivers matters here: the chart's hook sets nothing else.
  await checkKubeconfig(f.kubeconfig, sourceOf(cmd, 'kubeconfig', '--kubeconfig'));
  const [{ pino }, { deleteFleetSlices }, { fleetKubeConfig }, { KubeApi }] = await Promise.all([
    import('pino'),
    import('../fleet/cleanup.js'),
    import('../fleet/run.js'),
    import('../kube/api.js'),
  ]);
  const done = await deleteFleetSlices({
    api: new KubeApi(fleetKubeConfig(f.kubeconfig, c.concurrency, c.timeoutMs)),
    nodeSelector: f.nodeSelector || undefined,
    driverName: c.driverName,
    nics: c.nics,
    computeDomains: f.computeDomains,
    concurrency: c.concurrency,
  });
  pino({ name: 'fakegpu-fleet' }, pino.destination(2)).info(done, "deleted the fleet's slices");
}

/** Most shards: each is a Lease every replica lists each period, and a shard holds one node or more. */
const MAX_SHARDS = 1024;

/** `--shards`: 0 for one leader; sharding needs the Leases, so not with `--leader-elect=false`. */
function checkShards(f: Flags, cmd: Command, election: { name: string } | undefined): number {
  const flag = sourceOf(cmd, 'shards', '--shards');
  const n = intFlag(f.shards, flag, 0, MAX_SHARDS);
  if (n > 0 && !election)
    throw new FakegpuError(
      flag,
      `${String(n)} needs the Leases; it cannot be used with --leader-elect=false`,
    );
  // The Lease name is also a label value on each of the ring's Leases.
  if (n > 0 && election && election.name.length > 63)
    throw new FakegpuError(
      sourceOf(cmd, 'leaderElectionLeaseName', '--leader-election-lease-name'),
      `${show(election.name)} is longer than 63 characters; with --shards it is also a label value`,
    );
  return n;
}

/** The default profile, rendered whole as validate does, for a node of a short name. */
function checkProfile(f: Flags, c: Common): void {
  if (f.profile === '-')
    throw new FakegpuError(
      '--profile',
      '"-" (standard input) cannot serve the fleet, which reads its profile again for every node it starts; give a preset or a file',
    );
  if (f.profile === undefined) return;
  // A machine that cannot be built (a MIG layout that does not fit, a driver version) stops here rather
  // than on every node.
  renderSlices(resolveProfile(f.profile), {
    nodeName: 'node',
    dynamicMig: c.gates.DynamicMIG,
    driverName: c.driverName,
    kubernetesVersion: parseKubernetesVersion(DEFAULT_KUBERNETES_VERSION, '--kubernetes-version'),
    release: c.release,
    gates: c.gates,
    consumableShares: c.consumableShares,
    nics: c.nics,
  });
}

async function fleetAction(f: FleetFlags, cmd: Command): Promise<void> {
  // Every input is checked before anything starts (API calls, the HTTP server), each in one line.
  const c = checkCommon(f, cmd);
  const election = checkLeaderElection(f, cmd);
  const shards = checkShards(f, cmd, election);
  if (f.deleteSlices) {
    await deleteSlices(f, cmd, c);
    return;
  }
  checkProfile(f, c);
  const pools = f.pools ? loadPools(f.pools, '--pools', c.release) : undefined;
  const dcgmStyle = await checkServingFlags(f, cmd);
  // Loaded once the flags are checked: the API client, metrics and the logger are no part of other
  // commands' start-up.
  const [{ pino }, { runFleet }, { leaseIdentity }, { runUntilStopped }] = await Promise.all([
    import('pino'),
    import('../fleet/run.js'),
    import('../kube/lease.js'),
    import('../process/shutdown.js'),
  ]);
  const log = pino({ name: 'fakegpu-fleet' }, pino.destination(2));
  const options: FleetRunOptions = {
    nodeSelector: f.nodeSelector || undefined,
    profileLabel: f.profileLabel,
    defaultProfile: f.profile,
    pools,
    dynamicMig: c.gates.DynamicMIG,
    driverName: c.driverName,
    release: c.release,
    gates: c.gates,
    consumableShares: c.consumableShares,
    nics: c.nics,
    concurrency: c.concurrency,
    qps: c.qps,
    burst: c.burst,
    kubeconfig: f.kubeconfig,
    requestTimeoutMs: c.timeoutMs,
    faults: f.faults,
    ignoredXids: ignoredXids(c.ignored),
    computeDomains: f.computeDomains ? { namespace: c.driverNamespace } : undefined,
    httpEndpoint: f.httpEndpoint,
    dcgmEndpoint: f.dcgmEndpoint || undefined,
    dcgmStyle,
    log,
    leaderElection: election && shards === 0 ? { ...election, identity: leaseIdentity() } : undefined,
    sharding: election && shards > 0 ? { ...election, shards, identity: leaseIdentity } : undefined,
  };
  await runUntilStopped(() => runFleet(options), { log });
}
