import { styleOf } from '../model/dcgm/version.js';
import { serveDcgm } from '../process/dcgm-server.js';
import { FleetDcgm } from '../fleet/dcgm.js';
import { createServer } from 'node:http';
import { Command, Option } from 'commander';
import { pino } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { FakegpuError } from '../errors.js';
import { checkNamespace } from '../kube/objects.js';
import { parseRelease } from '../model/device/release.js';
import { KubeFaultApi } from '../kube/gpufault/api.js';
import { deleteFleetSlices } from '../fleet/cleanup.js';
import { Fleet } from '../fleet/fleet.js';
import { checkIgnoredXids, ignoredXids } from '../model/health/taints.js';
import { loadPools } from '../fleet/pools.js';
import { clientOf, PooledKubeConfig } from '../kube/client.js';
import { KubeApi } from '../kube/api.js';
import { DRANET } from '../model/nic/attributes.js';
import { parseKubernetesVersion } from '../kube/types/version.js';
import { resolveProfile } from '../process/profile-file.js';
import { renderSlices } from '../model/render.js';
import { checkDriverName, DEFAULT_KUBERNETES_VERSION } from './commands.js';
import {
  checkEndpoint,
  checkKubeconfig,
  dcgmEndpointOption,
  dcgmVersionOption,
  driverNameOption,
  driverNamespaceOption,
  driverReleaseOption,
  dynamicMigOption,
  envOption,
  intFlag,
  kubeconfigOption,
  noComputeDomainsOption,
  sourceOf,
} from './options.js';
import { splitEndpoint } from '../process/endpoint.js';

interface Flags {
  nodeSelector?: string;
  profileLabel: string;
  profile?: string;
  pools?: string;
  dynamicMig?: boolean;
  driverName: string;
  draDriverRelease: string;
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
}

/**
 * NICs stay off by default here, unlike in render and the plugin: the chart (fleet.nics), `cluster up` and
 * the benchmark rely on it. `--no-nics` is accepted as everywhere else, so the flag works the same way on
 * every command.
 */
function noNicsOption(): Option {
  return new Option('--no-nics', 'publish GPUs only (the default)').env('FAKEGPU_NO_NICS');
}

export function fleetCommand(): Command {
  return new Command('fleet')
    .description("publish GPU ResourceSlices for many nodes without a plugin (KWOK's), one profile per node")
    .addOption(
      envOption(
        '--node-selector <labels>',
        'label selector of the nodes to serve (default: KWOK-managed nodes and nodes with the profile label)',
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
    .addOption(driverNamespaceOption())
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
    )
    .action(async (f: Flags, cmd: Command) => {
      // Every input is checked before anything starts (API calls, the HTTP server), each in one line.
      const ignored = checkIgnoredXids(
        f.additionalXidsToIgnore,
        sourceOf(cmd, 'additionalXidsToIgnore', '--additional-xids-to-ignore'),
      );
      const release = parseRelease(f.draDriverRelease, '--dra-driver-release');
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
      const concurrency = intFlag(f.concurrency, '--concurrency', 1);
      const qps = intFlag(f.qps, '--qps', 0);
      const burst = intFlag(f.burst, '--burst', 1);
      // Node's timers hold at most 2^31-1 ms; past that a deadline would fire at once.
      const timeoutMs = intFlag(f.requestTimeout, '--request-timeout', 1, 2_147_483) * 1000;
      if (f.deleteSlices) {
        // Only what selects nodes and names drivers matters here: the chart's hook sets nothing else.
        await checkKubeconfig(f.kubeconfig, sourceOf(cmd, 'kubeconfig', '--kubeconfig'));
        const kc = new PooledKubeConfig(concurrency, { timeoutMs });
        if (f.kubeconfig) kc.loadFromFile(f.kubeconfig);
        else kc.loadFromDefault();
        const done = await deleteFleetSlices({
          api: new KubeApi(kc),
          nodeSelector: f.nodeSelector || undefined,
          profileLabel: f.profileLabel,
          driverName,
          nics,
          computeDomains: f.computeDomains,
          concurrency,
        });
        pino({ name: 'fakegpu-fleet' }, pino.destination(2)).info(done, "deleted the fleet's slices");
        return;
      }
      if (f.profile === '-')
        throw new FakegpuError(
          '--profile',
          '"-" (standard input) cannot serve the fleet, which reads its profile again for every node it starts; give a preset or a file',
        );
      if (f.profile !== undefined) {
        // Rendered whole, as validate does, for a node of a short name: a machine that cannot be built
        // (a MIG layout that does not fit, a driver version) stops here rather than on every node.
        renderSlices(resolveProfile(f.profile), {
          nodeName: 'node',
          dynamicMig: f.dynamicMig === true,
          driverName,
          kubernetesVersion: parseKubernetesVersion(DEFAULT_KUBERNETES_VERSION, '--kubernetes-version'),
          release,
          nics,
        });
      }
      const pools = f.pools ? loadPools(f.pools) : undefined;
      if (f.httpEndpoint)
        await checkEndpoint(f.httpEndpoint, sourceOf(cmd, 'httpEndpoint', '--http-endpoint'));
      if (f.dcgmEndpoint)
        await checkEndpoint(f.dcgmEndpoint, sourceOf(cmd, 'dcgmEndpoint', '--dcgm-endpoint'));
      const dcgmStyle = styleOf(
        f.dcgmExporterVersion,
        sourceOf(cmd, 'dcgmExporterVersion', '--dcgm-exporter-version'),
      );
      await checkKubeconfig(f.kubeconfig, sourceOf(cmd, 'kubeconfig', '--kubeconfig'));
      const endpoint = f.httpEndpoint ? splitEndpoint(f.httpEndpoint) : null;
      const log = pino({ name: 'fakegpu-fleet' }, pino.destination(2));
      // One keep-alive connection per worker, instead of a TLS handshake per write.
      const kc = new PooledKubeConfig(concurrency, { timeoutMs });
      if (f.kubeconfig) kc.loadFromFile(f.kubeconfig);
      else kc.loadFromDefault();
      const reg = new Registry();
      const applied = new Counter({
        name: 'fakegpu_fleet_faults_applied_total',
        help: 'devices GpuFaults hit on served nodes, counted when their slices change',
        registers: [reg],
      });
      const publish = new Histogram({
        name: 'fakegpu_fleet_fault_publish_seconds',
        help: 'seconds from a GpuFault seen to the slices of every node it hits written',
        buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
        registers: [reg],
      });
      const fleet = new Fleet(kc, {
        nodeSelector: f.nodeSelector || undefined,
        profileLabel: f.profileLabel,
        defaultProfile: f.profile,
        pools,
        dynamicMig: f.dynamicMig === true,
        driverName,
        release,
        nics,
        concurrency,
        qps,
        burst,
        log,
        faults: f.faults ? new KubeFaultApi(kc) : undefined,
        ignoredXids: ignoredXids(ignored),
        computeDomains: f.computeDomains ? { namespace: driverNamespace } : undefined,
        onFaultApplied: (n) => {
          applied.inc(n);
        },
        onFaultPublished: (sec) => {
          publish.observe(sec);
        },
      });
      collectDefaultMetrics({ register: reg, prefix: 'fakegpu_fleet_' });
      const gauge = (name: string, help: string, read: () => number): void => {
        new Gauge({
          name,
          help,
          registers: [reg],
          collect() {
            this.set(read());
          },
        });
      };
      gauge('fakegpu_fleet_nodes', 'nodes served', () => fleet.snapshot().nodes);
      gauge(
        'fakegpu_fleet_pending_nodes',
        'nodes queued or being reconciled',
        () => fleet.snapshot().pending,
      );
      gauge('fakegpu_fleet_slices', 'ResourceSlices of served nodes', () => fleet.snapshot().slices);
      gauge('fakegpu_fleet_writes', 'slice creates, updates and deletes so far', () => fleet.stats.writes);
      gauge(
        'fakegpu_fleet_api_requests',
        'API requests so far (lists, watches, writes, events)',
        () => fleet.stats.requests,
      );
      gauge(
        'fakegpu_fleet_watch_events',
        'node and slice watch events received so far',
        () => fleet.stats.events,
      );
      gauge('fakegpu_fleet_converged', '1 when every served node is published', () =>
        fleet.converged() ? 1 : 0,
      );
      gauge(
        'fakegpu_fleet_memory_collections',
        "V8's memory-reducing collections run after bursts of work (needs --expose-gc)",
        () => fleet.settler.collections,
      );
      gauge(
        'fakegpu_fleet_first_published_seconds',
        'seconds from start until every served node was first published (-1 until then)',
        () => (fleet.firstConvergedMs === null ? -1 : fleet.firstConvergedMs / 1000),
      );
      await fleet.start();
      log.info({ nodes: fleet.snapshot().nodes }, 'fleet started');
      const dcgm = f.dcgmEndpoint
        ? new FleetDcgm(fleet, {
            http: clientOf(kc),
            api: new KubeApi(kc),
            log,
            driverName,
            style: dcgmStyle,
          })
        : null;
      dcgm?.start();
      const dcgmServer =
        dcgm && f.dcgmEndpoint ? await serveDcgm(f.dcgmEndpoint, () => dcgm.exposition(), log) : null;
      const http = endpoint
        ? createServer((req, res) => {
            if (req.url === '/healthz') res.writeHead(200).end('ok\n');
            else if (req.url === '/readyz')
              res.writeHead(fleet.converged() ? 200 : 503).end(fleet.converged() ? 'ok\n' : 'publishing\n');
            else if (req.url === '/metrics')
              void reg.metrics().then((t) => res.writeHead(200, { 'content-type': reg.contentType }).end(t));
            else res.writeHead(404).end();
          }).listen(endpoint[1], endpoint[0])
        : null;
      await new Promise<void>((resolve) => {
        for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
          process.once(s, () => {
            log.info({ signal: s }, 'stopping');
            fleet.stop();
            dcgm?.stop();
            void dcgmServer?.close();
            http?.close();
            resolve();
            // Keep-alive sockets of aborted watches would hold the process; everything is stopped.
            setTimeout(() => process.exit(0), 200).unref();
          });
      });
    });
}
