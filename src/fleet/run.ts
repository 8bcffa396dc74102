import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { KubeApi, type ClusterApi } from '../kube/api.js';
import { clientOf, loadKubeconfigInto, PooledKubeConfig } from '../kube/client.js';
import { KubeFaultApi } from '../kube/gpufault/api.js';
import { Elected, LEASE_DURATION_MS, type ElectionOptions, type Work } from '../kube/lease.js';
import { ringQuiet } from '../kube/sharding/exclusion.js';
import { KubeObjects, type ObjectApi } from '../kube/objects.js';
import type { Style } from '../model/dcgm/exposition.js';
import { serveDcgm, type DcgmServer } from '../process/dcgm-server.js';
import { serveProbes, type ProbeServer } from '../process/probe-server.js';
import type { Running } from '../process/shutdown.js';
import { FleetDcgm } from './dcgm.js';
import { checkNoProxy, Fleet, type FleetOptions } from './fleet.js';
import { faultMetrics, fleetGauges, shardGauges } from './metrics.js';
import { FleetShards, type FleetShardingOptions } from './shards.js';
import { FleetScorecard, type FleetPicture } from './scorecard.js';
import { uiRoutes } from './ui.js';
import { scorecardGauges } from '../process/scorecard-metrics.js';

/** What `fakegpu fleet` serves and how, its flags checked. */
export interface FleetRunOptions extends Pick<
  FleetOptions,
  | 'nodeSelector'
  | 'profileLabel'
  | 'defaultProfile'
  | 'pools'
  | 'dynamicMig'
  | 'driverName'
  | 'release'
  | 'gates'
  | 'consumableShares'
  | 'nics'
  | 'concurrency'
  | 'qps'
  | 'burst'
  | 'ignoredXids'
> {
  kubeconfig?: string | undefined;
  /** Deadline of each API request, watches excepted. */
  requestTimeoutMs: number;
  /** Apply GpuFaults to the served nodes' slices. */
  faults: boolean;
  /** NVIDIA's compute-domain node side, its daemons in this namespace; absent: off. */
  computeDomains?: { namespace: string } | undefined;
  /** `/healthz` (live), `/readyz` (every node published, or standing by) and `/metrics`; '' for none. */
  httpEndpoint: string;
  /** dcgm-exporter's endpoint for every served node; absent: no GPU metrics. */
  dcgmEndpoint?: string | undefined;
  dcgmStyle?: Style | undefined;
  log: Logger;
  /** The API server; default: the kubeconfig's. Tests give an in-memory one. */
  api?: ClusterApi | undefined;
  /** Write only while holding this Lease (`api`: where it is kept; default the kubeconfig's); absent: always. */
  leaderElection?: (Omit<ElectionOptions, 'api'> & { api?: ObjectApi | undefined }) | undefined;
  /** Instead of one leader: the nodes split between replicas by shard Leases (`shards.ts`). */
  sharding?: (Omit<FleetShardingOptions, 'api'> & { api?: ObjectApi | undefined }) | undefined;
}

export interface RunningFleet extends Running {
  /** The probe server's port (the one the system chose for port 0); null without one. */
  probePort: number | null;
  /** Whether it holds the lease and writes now (always, without election). */
  leading(): boolean;
}

/** One keep-alive connection per worker, instead of a TLS handshake per write. */
export function fleetKubeConfig(
  kubeconfig: string | undefined,
  concurrency: number,
  timeoutMs: number,
): PooledKubeConfig {
  return loadKubeconfigInto(new PooledKubeConfig(concurrency, { timeoutMs }), kubeconfig);
}

/** One term of leadership: a fleet of its own, and its GPU metrics. */
interface Term extends Work {
  fleet: Fleet;
  dcgm: FleetDcgm | null;
  scorecard: FleetScorecard;
  /** Settles once the first list is in: true, or false when the fleet stopped or could not start. */
  started: Promise<boolean>;
}

/**
 * The probes (live at once: the first list waits for the API server as long as it takes, and a
 * liveness probe failing meanwhile would only restart the wait), the GPU metrics endpoint, and the
 * fleet, built anew for each term of leadership: a standby lists nothing and writes nothing.
 */
export async function runFleet(o: FleetRunOptions): Promise<RunningFleet> {
  const kc = fleetKubeConfig(o.kubeconfig, o.concurrency, o.requestTimeoutMs);
  checkNoProxy(kc);
  if (o.sharding) return runSharded(o, o.sharding, kc);
  const reg = new Registry();
  const onFaults = faultMetrics(reg);
  let term: Term | null = null;
  const { leaderElection: le } = o;
  const api = le?.api ?? new KubeObjects(clientOf(kc));
  const elected = new Elected({
    // A leader only once no replica of a sharded fleet of the same Lease name writes (a rollout between them).
    election: le
      ? {
          ...le,
          api,
          mayAcquire: ringQuiet(api, le.namespace, le.name, le.leaseDurationMs ?? LEASE_DURATION_MS),
        }
      : undefined,
    log: o.log,
    lead: () => {
      const t = lead(o, kc, onFaults, undefined, () => elected.leadingUntil());
      term = t;
      return {
        stop: async () => {
          if (term === t) term = null;
          await t.stop();
        },
      };
    },
  });
  fleetGauges(reg, () => term?.fleet ?? null);
  const picture = async (): Promise<FleetPicture | null> => (await term?.scorecard.current()) ?? null;
  scorecardGauges(reg, async () => (await picture())?.scorecard ?? null);
  const probes = o.httpEndpoint
    ? await serveProbes({
        endpoint: o.httpEndpoint,
        // A standby is ready: a rollout's new pod stands by until the old one hands the lease over. Not
        // before the lease has answered: until then it would read ready before publishing a thing.
        ready: () => elected.decided && (!elected.leading || (term?.fleet.converged() ?? false)),
        notReady: () => publishing(term?.fleet),
        metrics: reg,
        log: o.log,
        routes: uiRoutes(picture),
      })
    : null;
  probes?.started();
  let dcgmServer: DcgmServer | null = null;
  try {
    if (o.dcgmEndpoint)
      dcgmServer = await serveDcgm(o.dcgmEndpoint, () => term?.dcgm?.exposition() ?? [], o.log);
  } catch (e) {
    await probes?.close();
    throw e;
  }
  try {
    // Without election the fleet is built here, and a refusal of its options ends the start.
    elected.start();
  } catch (e) {
    await dcgmServer?.close();
    await probes?.close();
    throw e;
  }
  return stoppable(elected, probes, dcgmServer);
}

/**
 * The sharded fleet: one `Fleet` for the whole life of the process, writing only the nodes of the
 * shards this replica holds; the others are ready at once too, each for its own nodes.
 */
async function runSharded(
  o: FleetRunOptions,
  sh: NonNullable<FleetRunOptions['sharding']>,
  kc: PooledKubeConfig,
): Promise<RunningFleet> {
  const reg = new Registry();
  const shards = new FleetShards({ ...sh, api: sh.api ?? new KubeObjects(clientOf(kc)) }, o.log);
  const term = lead(o, kc, faultMetrics(reg), shards);
  fleetGauges(reg, () => term.fleet);
  shardGauges(reg, () => shards.state());
  scorecardGauges(reg, async () => (await term.scorecard.current())?.scorecard ?? null);
  let probes: ProbeServer | null = null;
  let dcgmServer: DcgmServer | null = null;
  try {
    probes = o.httpEndpoint
      ? await serveProbes({
          endpoint: o.httpEndpoint,
          ready: () => term.fleet.converged(),
          notReady: () => publishing(term.fleet),
          metrics: reg,
          log: o.log,
          routes: uiRoutes(() => term.scorecard.current()),
        })
      : null;
    probes?.started();
    if (o.dcgmEndpoint)
      dcgmServer = await serveDcgm(o.dcgmEndpoint, () => term.dcgm?.exposition() ?? [], o.log);
  } catch (e) {
    await term.stop();
    await probes?.close();
    throw e;
  }
  // A replica joins the ring only once it knows every node and slice: a shard it took earlier would go
  // unwritten for as long as its first list takes (tens of seconds at 100,000 nodes).
  let stopping = false;
  let member = false;
  void term.started.then((ok) => {
    if (!ok || stopping) return;
    shards.start(term.fleet);
    member = true;
  });
  return {
    probePort: probes?.port ?? null,
    leading: () => shards.state().held > 0,
    async stop() {
      stopping = true;
      // The shards are handed back only once their writes have ended, then the fleet stops.
      if (member) await shards.stop();
      await term.stop();
      await dcgmServer?.close();
      await probes?.close();
    },
  };
}

/**
 * /readyz's answer while publishing: how many of the nodes it writes are published, once it knows any
 * (`cluster up` shows it as progress; a probe reads only the status).
 */
function publishing(fleet: Fleet | undefined): string {
  const s = fleet?.snapshot();
  if (!s || s.owned === 0) return 'publishing';
  // The queue may also hold nodes gone or not this replica's: never below none.
  return `publishing ${String(Math.max(0, s.owned - s.pending))}/${String(s.owned)} nodes`;
}

function stoppable(elected: Elected, probes: ProbeServer | null, dcgm: DcgmServer | null): RunningFleet {
  return {
    probePort: probes?.port ?? null,
    leading: () => elected.leading,
    async stop() {
      await elected.stop();
      await dcgm?.close();
      await probes?.close();
    },
  };
}

/** Starts a fleet; its first list runs on behind, so that the lease is renewed meanwhile. */
function lead(
  o: FleetRunOptions,
  kc: PooledKubeConfig,
  onFaults: ReturnType<typeof faultMetrics>,
  owner?: FleetShards,
  leadingUntil?: () => number,
): Term {
  const fleet = new Fleet(kc, {
    nodeSelector: o.nodeSelector,
    profileLabel: o.profileLabel,
    defaultProfile: o.defaultProfile,
    pools: o.pools,
    dynamicMig: o.dynamicMig,
    driverName: o.driverName,
    release: o.release,
    gates: o.gates,
    consumableShares: o.consumableShares,
    nics: o.nics,
    concurrency: o.concurrency,
    qps: o.qps,
    burst: o.burst,
    log: o.log,
    api: o.api,
    faults: o.faults ? new KubeFaultApi(kc) : undefined,
    ignoredXids: o.ignoredXids,
    computeDomains: o.computeDomains,
    owner,
    leadingUntil,
    ...onFaults,
  });
  const scorecard = FleetScorecard.of(fleet, clientOf(kc), o.log, o.driverName);
  const dcgm = o.dcgmEndpoint
    ? new FleetDcgm(fleet, {
        http: clientOf(kc),
        api: o.api ?? new KubeApi(kc),
        log: o.log,
        driverName: o.driverName,
        style: o.dcgmStyle,
      })
    : null;
  let stopped = false;
  const started = fleet.start().then(
    () => {
      if (stopped) return false;
      o.log.info({ nodes: fleet.snapshot().nodes }, 'fleet started');
      dcgm?.start();
      return true;
    },
    (e: unknown) => {
      o.log.error({ err: e instanceof Error ? e.message : String(e) }, 'fleet did not start');
      return false;
    },
  );
  return {
    fleet,
    dcgm,
    scorecard,
    started,
    async stop() {
      stopped = true;
      await fleet.stop();
      dcgm?.stop();
      scorecard.stop();
    },
  };
}
