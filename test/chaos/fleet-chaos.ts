import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterRestart, type Exports } from '../../src/local-cluster/cluster.js';
import { env } from '../../src/local-cluster/components.js';
import { layout } from '../../src/local-cluster/config.js';
import { FLEET_MALLOC_ENV, fleetArgs } from '../../src/local-cluster/fleet-process.js';
import { isAlive, readPid, startDaemon } from '../../src/local-cluster/process.js';
import { readState } from '../../src/local-cluster/state.js';
import { eventually, sharedCluster } from '../support/cluster.js';
import { chaosFlags, FleetSlices, runCycles } from './fleet-slices.js';
import { seeded } from '../support/random.js';

/**
 * The fleet's chaos suite: KWOK nodes served by two fleet replicas that elect a leader through a Lease
 * (the cluster's own fleet and a second one started here with the same flags), GpuFaults coming and
 * going, and each cycle one disruption: a `kill -9` of the leader in the middle of its work, an API
 * server restart or an etcd restart. After each: every KWOK node has exactly one complete pool per
 * driver (slice count and generation agree), every present fault's GPU is tainted, and the slices stay
 * still for a quiet window (two writers with any difference rewrite each other). Terms of leadership are
 * read from both replicas' logs ("leading" to "stopped leading", or to the kill): two terms that overlap
 * are a duplicate writer. `scripts/chaos.mjs --fleet` runs it and prints its last line.
 */

const { dir, node, kwokNodes, cycles, seed, resultFile } = chaosFlags();
const LEASE_MS = 15_000;
/**
 * The most a takeover may take after a `kill -9`: the standby counts the lease from when it saw the last
 * renew (client-go's rule, safe against clock skew), which is up to one retry period (2 s) after it was
 * written; a second of room for a loaded machine's timers and the log line.
 */
const TAKEOVER_BOUND_S = (LEASE_MS + 2_000 + 1_000) / 1000;

const { random, pick } = seeded(seed);

const e: Exports = await sharedCluster({ dir, nodeName: node, kwokNodes });
const l = layout(dir);
const state = readState(l);
if (!state) throw new Error(`no cluster state in ${dir}`);

const REPLICAS = ['fakegpu-fleet', 'fakegpu-fleet-b'] as const;
type Replica = (typeof REPLICAS)[number];
const logFile = (r: Replica): string => join(l.logs, `${r}.log`);

/** The second replica: the cluster's fleet's flags, its own probe port, no metrics port. */
function startB(): void {
  if (!state) return;
  startDaemon(
    l.run,
    l.logs,
    'fakegpu-fleet-b',
    process.execPath,
    fleetArgs(l, state, { http: '127.0.0.1:51527' }),
    { ...env({ bin: state.bin, cniBin: state.cniBin }), ...FLEET_MALLOC_ENV },
  );
}

async function restartReplica(r: Replica): Promise<void> {
  if (r === 'fakegpu-fleet-b') startB();
  else await clusterRestart(dir, 'fakegpu-fleet', () => undefined);
}

interface Term {
  replica: Replica;
  from: number;
  to: number;
}
/** When each replica was killed, by us: its term ends there, as its log cannot say. */
const kills: { replica: Replica; at: number }[] = [];

/** Each replica's terms of leadership, from its pino lines (a log holds every run, appended). */
function terms(now: number): Term[] {
  const out: Term[] = [];
  for (const r of REPLICAS) {
    let open: number | null = null;
    const close = (at: number): void => {
      if (open !== null) out.push({ replica: r, from: open, to: at });
      open = null;
    };
    for (const line of readFileSync(logFile(r), 'utf8').split('\n')) {
      if (line.startsWith('=== ')) {
        // A new run: the last one ended at its kill (the latest one before this start).
        const started = Date.parse(line.slice(4, 28));
        const k = kills.filter((x) => x.replica === r && x.at <= started).at(-1);
        close(k?.at ?? started);
        continue;
      }
      if (!line.startsWith('{')) continue;
      let p: { time?: number; msg?: string };
      try {
        p = JSON.parse(line) as { time?: number; msg?: string };
      } catch {
        continue;
      }
      if (p.msg === 'leading' && p.time !== undefined) open ??= p.time;
      if (p.msg === 'stopped leading' && p.time !== undefined) close(p.time);
    }
    const k = kills.filter((x) => x.replica === r).at(-1);
    close(k && open !== null && k.at >= open ? k.at : now);
  }
  return out.filter((t) => t.to > since).map((t) => ({ ...t, from: Math.max(t.from, since) }));
}

/** Logs are appended run after run: only what happened since this run began counts. */
const since = Date.now();

function overlaps(ts: Term[]): number {
  let n = 0;
  for (const x of ts) for (const y of ts) if (x.replica < y.replica && x.from < y.to && y.from < x.to) n++;
  return n;
}

function leader(): Replica | null {
  const open = terms(Date.now()).filter((t) => t.to >= Date.now() - 1);
  return open.length === 1 ? (open[0]?.replica ?? null) : null;
}

const fs = new FleetSlices(e, kwokNodes, random);

const takeovers: number[] = [];
async function killLeader(): Promise<string> {
  const r = await eventually('one leader', () => leader() ?? undefined, LEASE_MS * 3);
  const pid = readPid(l.run, r);
  if (pid === null || !isAlive(pid)) throw new Error(`${r} leads but runs no process`);
  // In the middle of its work: right after a fault, which it is publishing.
  process.kill(pid, 'SIGKILL');
  const at = Date.now();
  kills.push({ replica: r, at });
  const other = REPLICAS.find((x) => x !== r) as Replica;
  const took = await eventually(
    `${other} leading after the kill`,
    () => terms(Date.now()).find((t) => t.replica === other && t.from > at)?.from,
    LEASE_MS * 4,
  );
  takeovers.push((took - at) / 1000);
  if ((took - at) / 1000 > TAKEOVER_BOUND_S)
    throw new Error(
      `${other} led ${((took - at) / 1000).toFixed(1)}s after the kill, past ${String(TAKEOVER_BOUND_S)}s`,
    );
  await restartReplica(r);
  return `killed ${r}, ${other} led after ${((took - at) / 1000).toFixed(1)}s`;
}

const HITS = ['kill-leader', 'etcd', 'kube-apiserver'] as const;
startB();
await runCycles({
  fs,
  cycles,
  resultFile,
  takeovers,
  duplicates: () => overlaps(terms(Date.now())),
  // Each kind once first, so that even the short form meets all three.
  hit: async (c) => {
    const hit = HITS[c] ?? pick(['kill-leader', 'kill-leader', 'kube-apiserver', 'etcd'] as const);
    if (hit === 'kill-leader') return killLeader();
    await clusterRestart(dir, hit, () => undefined);
    return `restarted ${hit}`;
  },
  cleanUp: () => {
    const pid = readPid(l.run, 'fakegpu-fleet-b');
    if (pid !== null && isAlive(pid)) process.kill(pid, 'SIGTERM');
  },
});
