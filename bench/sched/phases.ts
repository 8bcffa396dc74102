/**
 * The two phases on the same nodes: the NVIDIA-faithful one on a `fakegpu fleet` process's slices, then
 * the generic one on ClusterLoader2's, each publishing its slices and running the same workload.
 */
import type { ChildProcess } from 'node:child_process';
import type { KubeConfig } from '@kubernetes/client-node';
import { FLEET_HTTP } from '../../src/local-cluster/cluster.js';
import { FakegpuError } from '../../src/errors.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import {
  get,
  inParallel,
  metric,
  type Node,
  Raw,
  seconds,
  SLICES_PATH,
  startFleet,
  stopFleet,
  until,
} from '../support.js';
import { faithfulClaim, faithfulClass, type Variant } from './claims.js';
import { type Config, log } from './config.js';
import { GENERIC_CLAIM, GENERIC_CLASS, GENERIC_DRIVER, genericSlice } from './generic.js';
import { CLASSES_PATH, cleanupNamespace, createTemplate, deleteSlices } from './objects.js';
import { f } from './report.js';
import { workload, type Workload } from './workload.js';
import { fleetDiffers, scorecardLine, scorecardOf } from '../scorecard.js';
import type { Scorecard } from '../../src/model/scorecard/score.js';

export interface Phase {
  driver: string;
  deviceClass: string;
  claim: unknown;
  devicesPerNode: number;
  capacity: number;
  slices: number;
  /** Seconds from the fleet's start (or the first generic POST) to every node published. */
  publishS: number;
  work: Workload;
  /** `fakegpu report`'s figures once the workload is done, before its pods go; it counts NVIDIA's GPUs only. */
  scorecard: Scorecard | null;
  /** Figures where the fleet's own scorecard differed from the API's (`fleet/API`); empty: none. */
  fleetScorecardDiffers?: string[];
}

export interface Results {
  nodes: number;
  faithful: Phase;
  generic: Phase;
}

/** What the bench has made that is not its namespace's, for the cleanup of an existing cluster. */
export interface Made {
  /** DeviceClasses the cluster lacked. */
  classes: string[];
  genericClass: boolean;
  fleet: ChildProcess | null;
  /** The fleet may have published slices that are not deleted yet. */
  fleetSlices: boolean;
}

/** Where the phases run. */
export interface Target {
  cfg: Config;
  kubeconfig: string;
  kc: KubeConfig;
  raw: Raw;
  nodes: Node[];
}

/** The drivers whose slices the fleet publishes for the variant. */
export const fleetDrivers = (variant: Variant): string[] => [
  DRIVER_NAME,
  ...(variant === 'nic-aligned' ? [DRANET] : []),
];

export async function faithfulPhase(t: Target, made: Made): Promise<Phase> {
  const { cfg, raw, nodes } = t;
  const N = nodes.length;
  log(
    `faithful: the fleet publishes ${N} nodes of ${cfg.profile}${cfg.dynamicMig ? ' with dynamic MIG' : ''}${cfg.variant === 'nic-aligned' ? ' with NICs' : ''}`,
  );
  const t0 = performance.now();
  made.fleetSlices = true;
  const f0 = startFleet(
    t.kubeconfig,
    [
      `--profile=${cfg.profile}`,
      ...(cfg.selector ? [`--node-selector=${cfg.selector}`] : []),
      ...(cfg.variant === 'nic-aligned' ? ['--nics'] : []),
    ],
    { dynamicMig: cfg.dynamicMig, log },
  );
  made.fleet = f0;
  const alive = (): void => {
    if (f0.exitCode !== null) throw new FakegpuError('bench/sched', 'the fleet exited');
  };
  await until('the fleet to publish every node', Math.max(900_000, N * 500), async () => {
    alive();
    return (await get(`http://${FLEET_HTTP}/readyz`)).status === 200;
  });
  const publishS = seconds(t0);
  const m = (await get(`http://${FLEET_HTTP}/metrics`)).text;
  const served = metric(m, 'fakegpu_fleet_nodes');
  if (served !== N)
    throw new FakegpuError('bench/sched', `the fleet serves ${served} nodes, expected the ${N} selected`);
  const slices = metric(m, 'fakegpu_fleet_slices');
  log(`faithful: ${slices} slices published in ${f(publishS)} s`);
  const claim = faithfulClaim(cfg.variant, cfg.shape, cfg.migProfile);
  await createTemplate(raw, 'sched-faithful', claim);
  const capacity = N * cfg.shape.perNode;
  const work = await workload(cfg, t.kc, raw, 'faithful', 'sched-faithful', capacity, alive);
  const scorecard = await scorecardOf(t.kc);
  log(scorecardLine('faithful', scorecard));
  // The fleet's page and scorecard metrics, worked out from its own view, against the API objects.
  const differ = await fleetDiffers(FLEET_HTTP, t.kc);
  log(
    differ.length === 0
      ? "faithful: the fleet's scorecard (its page, its metrics) equals the API's"
      : `faithful: the fleet's scorecard differs from the API's (fleet/API): ${differ.join(', ')}`,
  );
  await cleanupNamespace(raw, cfg.inFlight);
  await stopFleet(f0);
  made.fleet = null;
  log('faithful: fleet stopped; deleting its slices');
  for (const d of fleetDrivers(cfg.variant)) await deleteSlices(raw, nodes, d, false, cfg.inFlight);
  made.fleetSlices = false;
  return {
    driver: DRIVER_NAME,
    deviceClass: faithfulClass(cfg.variant),
    claim,
    devicesPerNode: cfg.shape.perNode,
    capacity,
    slices,
    publishS,
    work,
    scorecard,
    fleetScorecardDiffers: differ,
  };
}

/** ClusterLoader2's slices, posted by the bench itself as its KWOK driver would. */
export async function genericPhase(t: Target, made: Made): Promise<Phase> {
  const { cfg, raw, nodes } = t;
  const N = nodes.length;
  const gpus = cfg.shape.gpus;
  const r = await raw.send('POST', CLASSES_PATH, JSON.stringify(GENERIC_CLASS));
  if (r.status >= 300 && r.status !== 409)
    throw new Error(`creating DeviceClass ${GENERIC_DRIVER}: HTTP ${r.status}`);
  made.genericClass = r.status < 300;
  log(`generic: posting ${N} ${GENERIC_DRIVER} slices of ${gpus} devices without attributes`);
  const t1 = performance.now();
  await inParallel(nodes, cfg.inFlight, async (n) => {
    await raw.ok('POST', SLICES_PATH, genericSlice(n, gpus));
  });
  const publishS = seconds(t1);
  await createTemplate(raw, 'sched-generic', GENERIC_CLAIM);
  const work = await workload(cfg, t.kc, raw, 'generic', 'sched-generic', N * gpus, () => undefined);
  await cleanupNamespace(raw, cfg.inFlight);
  return {
    driver: GENERIC_DRIVER,
    deviceClass: GENERIC_DRIVER,
    claim: GENERIC_CLAIM,
    devicesPerNode: gpus,
    capacity: N * gpus,
    slices: N,
    publishS,
    work,
    scorecard: null,
  };
}
