import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { env } from '../../src/local-cluster/components.js';
import { layout } from '../../src/local-cluster/config.js';
import { FLEET_MALLOC_ENV, fleetArgs, fleetReplica } from '../../src/local-cluster/fleet-process.js';
import { isAlive, readPid, startDaemon } from '../../src/local-cluster/process.js';
import { readState } from '../../src/local-cluster/state.js';
import { mustKubectl, sharedCluster } from '../support/cluster.js';
import { seeded } from '../support/random.js';
import { AuditLog } from './audit.js';
import { overlapsOf, readHolds, WriteJudge, type Hold, type ReplicaLog } from './holds.js';
import { chaosFlags, chaosLog as log, FleetSlices, runCycles } from './fleet-slices.js';
import { SlowProxy } from './slow-proxy.js';

/**
 * One writer under a slow API server. The fleet talks to the API server only through a loopback proxy
 * that delays (50 ms to 1.5 s) or stalls (6 to 12 s) every request and answer, Lease GETs and renewals
 * included, its weather changing every few seconds through each rollout and takeover. Each cycle is a rollout between the chart's two
 * shapes: `replicas: 1` (one process electing itself leader through the fleet's Lease) and
 * `replicas: 3` (three processes splitting the nodes by shard Leases), the new shape started beside the
 * old, every slice deleted so that the handover comes mid-publish, then the old shape stopped. After
 * each: the slices' checks (`fleet-slices.ts`), and from the replicas' logs each process's holds (a
 * term of leadership holds every node; a shard its nodes): two that overlap are time with two writers
 * (`overlap_ms`), and from the API server's audit log every slice write it applied must have been
 * received while its sender held the node, or within the lease margin after with no other writer of
 * the node meanwhile (`holds.ts`, `WriteJudge`; `duplicate` counts those that were not, and the
 * overlaps; the others are reported as late).
 * `scripts/chaos.mjs --fleet --slow` runs it and prints its last line.
 */

const { dir, node, kwokNodes, cycles, seed, resultFile } = chaosFlags();
const SHARDS = 60;
const RING = [1, 2, 3];
const SINGLE = [0];

const { random } = seeded(seed);
const e: Exports = await sharedCluster({ dir, nodeName: node, kwokNodes, auditSlices: true });
const l = layout(dir);
const state = readState(l);
if (!state) throw new Error(`no cluster state in ${dir}`);
const fs = new FleetSlices(e, kwokNodes, random);

// The proxy in front of the API server, and a kubeconfig that goes through it.
const admin = readFileSync(l.adminKubeconfig, 'utf8');
const server = /server:\s*https:\/\/([^:\s]+):(\d+)/.exec(admin);
if (!server) throw new Error(`no https server in ${l.adminKubeconfig}`);
const proxy = new SlowProxy({ host: server[1] ?? '127.0.0.1', port: Number(server[2]) }, random);
const proxyPort = await proxy.listen();
const slowKubeconfig = join(dir, 'slow.kubeconfig');
writeFileSync(
  slowKubeconfig,
  admin.replace(server[0], `server: https://${server[1] ?? ''}:${String(proxyPort)}`),
);

const since = Date.now();
/** When each slot's process ended without a line of its own (killed after its stop took too long). */
const kills = new Map<number, number[]>();

function start(slot: number, sharded: boolean): void {
  if (!state) return;
  const args = fleetArgs(l, state, fleetReplica(slot)).map((a) =>
    a.startsWith('--kubeconfig=') ? `--kubeconfig=${slowKubeconfig}` : a,
  );
  startDaemon(
    l.run,
    l.logs,
    fleetReplica(slot).name,
    process.execPath,
    [...args, ...(sharded ? [`--shards=${String(SHARDS)}`] : [])],
    { ...env({ bin: state.bin, cniBin: state.cniBin }), ...FLEET_MALLOC_ENV },
  );
}

const alive = (slot: number): boolean => {
  const pid = readPid(l.run, fleetReplica(slot).name);
  return pid !== null && isAlive(pid);
};

/** SIGTERM, as a rollout stops a pod; SIGKILL after the chart's 30 s grace period. */
async function stop(slots: readonly number[]): Promise<void> {
  for (const s of slots) {
    const pid = readPid(l.run, fleetReplica(s).name);
    if (pid !== null && isAlive(pid)) process.kill(pid, 'SIGTERM');
  }
  const t0 = Date.now();
  while (slots.some(alive) && Date.now() - t0 < 30_000) await sleep(200);
  for (const s of slots.filter(alive)) {
    const pid = readPid(l.run, fleetReplica(s).name);
    if (pid === null) continue;
    process.kill(pid, 'SIGKILL');
    kills.set(s, [...(kills.get(s) ?? []), Date.now()]);
    log(`  ${fleetReplica(s).name} did not stop within 30 s: killed`);
  }
}

function holds(now: number): { holds: Hold[]; whoOfPid: Map<number, string> } {
  const logs: ReplicaLog[] = [];
  for (const slot of [...SINGLE, ...RING]) {
    let text: string;
    try {
      text = readFileSync(join(l.logs, `${fleetReplica(slot).name}.log`), 'utf8');
    } catch {
      continue;
    }
    logs.push({ replica: slot, text, kills: kills.get(slot) ?? [], alive: alive(slot) });
  }
  const read = readHolds(logs, now);
  return { ...read, holds: read.holds.filter((h) => h.to > since) };
}

const audit = new AuditLog(join(l.logs, 'audit.log'));
const judge = new WriteJudge({ since, shards: SHARDS, log });

let overlapMs = 0;
function duplicates(): number {
  const received = audit.next();
  const h = holds(Date.now());
  const outside = judge.judge(received, h);
  const o = overlapsOf(h.holds, log);
  overlapMs = o.ms;
  return outside + o.pairs;
}

// The cluster's own fleet talks to the API server directly: this suite's replace it.
await stop(SINGLE);
let shape: 'single' | 'ring' = 'single';
start(0, false);

await runCycles({
  fs,
  cycles,
  resultFile,
  takeovers: [],
  duplicates,
  extra: () => ({
    overlapMs,
    judged: judge.judged,
    late: judge.late,
    lateMaxMs: judge.lateMaxMs,
    slowMs: proxy.seen.slow,
    stallMs: proxy.seen.stall,
    seed,
  }),
  hit: async () => {
    const [from, to] = shape === 'single' ? [SINGLE, RING] : [RING, SINGLE];
    const next = shape === 'single' ? 'ring' : 'single';
    // The weather turns for the rollout and the takeover after it, then clears: the checks that follow
    // ask that nothing was lost once the API server answers again (under stalls longer than the renew
    // deadline every writer stands down, rightly, and nothing need progress).
    proxy.vary();
    for (const s of to) start(s, next === 'ring');
    // The new pods start and are ready as standbys; the old ones still write meanwhile.
    await sleep(2000 + Math.floor(random() * 3000));
    mustKubectl(e, ['delete', 'resourceslices', '--all', '--wait=false']);
    await sleep(Math.floor(random() * 1000));
    await stop(from);
    await sleep(3000 + Math.floor(random() * 7000));
    proxy.calm();
    shape = next;
    return `rolled out replicas ${String(from.length)} → ${String(to.length)} mid-publish`;
  },
  cleanUp: () => {
    proxy.close();
    for (const s of RING) {
      const pid = readPid(l.run, fleetReplica(s).name);
      if (pid !== null && isAlive(pid)) process.kill(pid, 'SIGTERM');
    }
  },
});
