import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterRestart, type Exports } from '../../src/local-cluster/cluster.js';
import { env } from '../../src/local-cluster/components.js';
import { layout } from '../../src/local-cluster/config.js';
import {
  FLEET_MALLOC_ENV,
  FLEET_SHARDS,
  fleetArgs,
  fleetReplica,
} from '../../src/local-cluster/fleet-process.js';
import { isAlive, readPid, startDaemon } from '../../src/local-cluster/process.js';
import { readState } from '../../src/local-cluster/state.js';
import { mustKubectl, sharedCluster } from '../support/cluster.js';
import { seeded } from '../support/random.js';
import { AuditLog } from './audit.js';
import { overlapsOf, readHolds, WriteJudge, type Holders, type ReplicaLog } from './holds.js';
import { chaosFlags, chaosLog as log, FleetSlices, runCycles } from './fleet-slices.js';

/**
 * The sharded fleet's chaos suite: KWOK nodes split between `--replicas` fleet processes by shard Leases
 * (`cluster up --fleet-replicas`), GpuFaults coming and going, and each cycle one disruption: a `kill -9`
 * of a replica or a replica joining, each in the middle of publishing every node (every slice deleted
 * just before), a joined replica leaving, an API server restart or an etcd restart. After each: the
 * slices' checks of `fleet-slices.ts`; every shard held again (the replicas' `fakegpu_fleet_shards_held`
 * add up to the shard count) within the bound after a kill; and, from every replica's log, each shard's
 * holders over time (`holds.ts`): two that overlap are a duplicate writer. And from the API server's
 * audit log, what reached it: every slice write a replica sent must have been received while that
 * replica process held the node's shard; one received outside (a late write of a killed, fenced or
 * drained replica) is a duplicate too.
 * `scripts/chaos.mjs --fleet --replicas N` runs it and prints its last line.
 */

const { dir, node, kwokNodes, cycles, seed, resultFile, extra } = chaosFlags({
  replicas: { type: 'string', default: '3' },
});
const replicas = Number(extra['replicas']);
const LEASE_MS = 15_000;
/**
 * After a `kill -9`, another member takes the shards once it has seen the dead one's member Lease
 * unchanged for a lease duration, counted from when it saw the last renew (up to a period, 2 s, after
 * it was written), and lists every period: one more period, and a second for a loaded machine's timers.
 */
const TAKEOVER_BOUND_S = (LEASE_MS + 2_000 + 2_000 + 1_000) / 1000;

const { random, pick } = seeded(seed);

const e: Exports = await sharedCluster({
  dir,
  nodeName: node,
  kwokNodes,
  fleetReplicas: replicas,
  auditSlices: true,
});
const l = layout(dir);
const state = readState(l);
if (!state) throw new Error(`no cluster state in ${dir}`);
const fs = new FleetSlices(e, kwokNodes, random);

/** The cluster's replicas, then the one that joins and leaves. */
const JOINER = replicas;
const all = Array.from({ length: replicas + 1 }, (_, r) => r);
const live = (): number[] =>
  all.filter((r) => {
    const pid = readPid(l.run, fleetReplica(r).name);
    return pid !== null && isAlive(pid);
  });

function start(r: number): void {
  if (!state) return;
  startDaemon(l.run, l.logs, fleetReplica(r).name, process.execPath, fleetArgs(l, state, fleetReplica(r)), {
    ...env({ bin: state.bin, cniBin: state.cniBin }),
    ...FLEET_MALLOC_ENV,
  });
}

/** A gauge of replica `r`'s metrics; 0 while it does not answer. */
async function gauge(r: number, name: string): Promise<number> {
  try {
    const text = await (await fetch(`http://${fleetReplica(r).http}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

const shardsHeld = (r: number): Promise<number> => gauge(r, 'fakegpu_fleet_shards_held');

/** Seconds until the live replicas hold every shard between them (and `r` at least `atLeast`). */
async function covered(what: string, r: number | null = null, atLeast = 0): Promise<number> {
  const from = Date.now();
  for (;;) {
    const held = await Promise.all(live().map(async (x) => [x, await shardsHeld(x)] as const));
    const sum = held.reduce((n, [, h]) => n + h, 0);
    const mine = held.find(([x]) => x === r)?.[1] ?? 0;
    if (sum === FLEET_SHARDS && mine >= atLeast) return (Date.now() - from) / 1000;
    if (Date.now() - from > LEASE_MS * 4)
      throw new Error(`${what}: shards held ${String(sum)}/${String(FLEET_SHARDS)}`);
    await sleep(250);
  }
}

/** When each replica was killed, by us: its holds end there, as its log cannot say. */
const kills: { r: number; at: number }[] = [];
const since = Date.now();

/** Each shard's holds, [from, to), by replica process, since this suite began; and whose each pid was. */
function holders(now: number): Holders {
  const logs: ReplicaLog[] = [];
  for (const r of all) {
    try {
      logs.push({
        replica: r,
        text: readFileSync(join(l.logs, `${fleetReplica(r).name}.log`), 'utf8'),
        kills: kills.filter((k) => k.r === r).map((k) => k.at),
        alive: live().includes(r),
      });
    } catch {
      continue;
    }
  }
  const read = readHolds(logs, now);
  return { ...read, holds: read.holds.filter((h) => h.to > since) };
}

const audit = new AuditLog(join(l.logs, 'audit.log'));
const judge = new WriteJudge({ since, shards: FLEET_SHARDS, log });

function overlaps(): number {
  // The audit log first, then the holds up to now: a write received after the holds were read (the
  // fleet's answer to the last fault cleared) was judged against holds closed before it came.
  const received = audit.next();
  const h = holders(Date.now());
  return judge.judge(received, h) + overlapsOf(h.holds, log).pairs;
}

/**
 * Every slice deleted, so that what comes next (a kill, a join) meets the replicas in the middle of
 * publishing every node again, with writes of the shards that move under way.
 */
function midPublish(): void {
  mustKubectl(e, ['delete', 'resourceslices', '--all', '--wait=false']);
}

const takeovers: number[] = [];
async function kill(): Promise<string> {
  midPublish();
  const r = pick(live());
  const pid = readPid(l.run, fleetReplica(r).name);
  if (pid === null) throw new Error(`replica ${String(r)} runs no process`);
  process.kill(pid, 'SIGKILL');
  const at = Date.now();
  kills.push({ r, at });
  await sleep(200);
  const took = (await covered(`after killing replica ${String(r)}`)) + 0.2;
  takeovers.push(took);
  if (took > TAKEOVER_BOUND_S)
    throw new Error(
      `shards held again ${took.toFixed(1)}s after the kill, past ${String(TAKEOVER_BOUND_S)}s`,
    );
  start(r);
  return `killed replica ${String(r)}, its shards held again after ${took.toFixed(1)}s`;
}

/** A replica joins mid-publish and takes its share; or, once joined, leaves and hands it back. */
async function joinOrLeave(): Promise<string> {
  if (!live().includes(JOINER)) {
    start(JOINER);
    // Once it is in the ring (its first period listed the members), the others hand it shards within a
    // period or two: every slice deleted now, those shards move while their nodes are being written.
    const t0 = Date.now();
    while ((await gauge(JOINER, 'fakegpu_fleet_shard_members')) === 0) {
      if (Date.now() - t0 > LEASE_MS * 4) throw new Error(`replica ${String(JOINER)} never joined the ring`);
      await sleep(100);
    }
    midPublish();
    const share = Math.floor(FLEET_SHARDS / live().length);
    await covered('after a replica joined', JOINER, share);
    const s = (Date.now() - t0) / 1000;
    return `replica ${String(JOINER)} joined mid-publish, holding its share ${s.toFixed(1)}s after it started`;
  }
  const pid = readPid(l.run, fleetReplica(JOINER).name);
  if (pid !== null) process.kill(pid, 'SIGTERM');
  await sleep(200);
  const s = await covered('after a replica left');
  return `replica ${String(JOINER)} left, its shards held again after ${s.toFixed(1)}s`;
}

const HITS = ['kill', 'join', 'kube-apiserver', 'join', 'etcd'] as const;
await covered('at the start');
await runCycles({
  fs,
  cycles,
  resultFile,
  takeovers,
  duplicates: overlaps,
  extra: () => ({ judged: judge.judged, late: judge.late, lateMaxMs: judge.lateMaxMs, seed }),
  // Each kind once first, so that even the short form meets them all.
  hit: async (c) => {
    const hit = HITS[c] ?? pick(['kill', 'kill', 'join', 'kube-apiserver', 'etcd'] as const);
    if (hit === 'kill') return kill();
    if (hit === 'join') return joinOrLeave();
    await clusterRestart(dir, hit, () => undefined);
    return `restarted ${hit}`;
  },
  cleanUp: () => {
    const pid = readPid(l.run, fleetReplica(JOINER).name);
    if (pid !== null && isAlive(pid)) process.kill(pid, 'SIGTERM');
  },
});
