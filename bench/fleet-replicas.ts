/**
 * `bench:fleet -- --replicas 1,2,4`: the same KWOK nodes published by 1, 2 and 4 fleet replicas that
 * shard them through Leases (`fakegpu fleet --shards`), each against the ceiling measured in the same
 * run; then a `kill -9` of one replica and the time until every shard is held again (with one replica, a
 * replacement is started at once and waits out the dead one's lease), and each replica's CPU seconds and
 * resident memory per node it writes. On this 2-core machine the API server is the limit, so the figures
 * say what sharding costs, not how fast it goes on a real control plane.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakegpuError } from '../src/errors.js';
import {
  deleteAllSlices,
  get,
  metric,
  postCeiling,
  procStatusKb,
  seconds,
  sliceNames,
  startFleet,
  stopFleet,
  until,
  type Node,
  type Raw,
  SCRAPE_EVERY_MS,
} from './support.js';

/** As `cluster up --fleet-replicas` shards them. */
const SHARDS = 60;

export interface ReplicaRun {
  replicas: number;
  publishS: number;
  ceilingS: number;
  ratio: number;
  takeoverS: number;
  /** Per replica: CPU seconds at the end of its publish, RSS KiB, nodes it writes. */
  cpuS: number[];
  rssKiB: number[];
  owned: number[];
}

interface Fleet {
  p: ChildProcess;
  http: string;
}

const replicaPorts = (i: number): { http: string; dcgm: string } => ({
  http: `127.0.0.1:${String(51530 + i)}`,
  dcgm: `127.0.0.1:${String(9420 + i)}`,
});

function start(kubeconfig: string, i: number, o: { dynamicMig: boolean; log: (l: string) => void }): Fleet {
  const { http, dcgm } = replicaPorts(i);
  const p = startFleet(
    kubeconfig,
    [`--http-endpoint=${http}`, `--dcgm-endpoint=${dcgm}`, `--shards=${String(SHARDS)}`],
    o,
  );
  return { p, http };
}

async function metricsOf(f: Fleet): Promise<string> {
  return (await get(`http://${f.http}/metrics`).catch(() => ({ status: 0, text: '' }))).text;
}

/** User and system CPU seconds of a process, from /proc (clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields =
    readFileSync(`/proc/${String(pid)}/stat`, 'utf8')
      .split(') ')[1]
      ?.split(' ') ?? [];
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / 100;
}

/** Seconds until the live replicas hold every shard and each has published its nodes. */
async function allServed(fleets: Fleet[], limitMs: number): Promise<number> {
  const t0 = performance.now();
  await until(
    'every shard held and published',
    limitMs,
    async () => {
      const ms = await Promise.all(fleets.map(metricsOf));
      const held = ms.reduce((n, m) => n + metric(m, 'fakegpu_fleet_shards_held'), 0);
      const ready = await Promise.all(
        fleets.map(async (f) => (await get(`http://${f.http}/readyz`)).status === 200),
      );
      return held === SHARDS && ready.every(Boolean);
    },
    SCRAPE_EVERY_MS,
  );
  return seconds(t0);
}

export async function replicaRuns(o: {
  kubeconfig: string;
  raw: Raw;
  nodes: readonly Node[];
  nodeBodies: (n: Node) => string[];
  slices: number;
  inFlight: number;
  counts: readonly number[];
  dynamicMig: boolean;
  log: (line: string) => void;
}): Promise<ReplicaRun[]> {
  const out: ReplicaRun[] = [];
  // Only the slices of the bench's nodes are deleted and counted: on a cluster not the bench's own
  // (`--kubeconfig`) others' slices stay.
  const clear = (): Promise<void> => deleteAllSlices(o.raw, o.inFlight, o.log, o.nodes);
  for (const r of o.counts) {
    await clear();
    const t0 = performance.now();
    await postCeiling(o.raw, o.nodes, o.nodeBodies, {
      inFlight: o.inFlight,
      total: o.slices,
      what: `replicas=${String(r)}, ceiling`,
      log: o.log,
    });
    const ceilingS = seconds(t0);
    await clear();
    o.log(
      `replicas=${String(r)}: ceiling ${ceilingS.toFixed(1)} s; publishing ${String(o.nodes.length)} nodes`,
    );
    const fleets = Array.from({ length: r }, (_, i) => start(o.kubeconfig, i, o));
    try {
      const publishS = await allServed(fleets, Math.max(900_000, 4000 * ceilingS));
      const published = (await sliceNames(o.raw, o.nodes)).length;
      if (published !== o.slices)
        throw new FakegpuError(
          'bench/fleet',
          `${String(r)} replicas published ${String(published)} slices, expected ${String(o.slices)}`,
        );
      const cpuS = fleets.map((f) => cpuSeconds(f.p.pid ?? 0));
      const rssKiB = fleets.map((f) => procStatusKb(f.p.pid ?? 0)('VmRSS'));
      const owned = await Promise.all(
        fleets.map(async (f) => metric(await metricsOf(f), 'fakegpu_fleet_owned_nodes')),
      );
      const takeoverS = await killOne(fleets, o);
      out.push({
        replicas: r,
        publishS,
        ceilingS,
        ratio: ceilingS / publishS,
        takeoverS,
        cpuS,
        rssKiB,
        owned,
      });
    } finally {
      for (const f of fleets) await stopFleet(f.p);
    }
  }
  return out;
}

/** `kill -9` of the first replica; with one, a replacement joins at once. Seconds until all are held. */
async function killOne(
  fleets: Fleet[],
  o: { kubeconfig: string; dynamicMig: boolean; log: (l: string) => void },
): Promise<number> {
  const victim = fleets[0];
  if (!victim) return 0;
  const t0 = performance.now();
  victim.p.kill('SIGKILL');
  await new Promise((r) => victim.p.once('exit', r));
  fleets.shift();
  if (fleets.length === 0) fleets.push(start(o.kubeconfig, 9, o));
  await sleep(100);
  await allServed(fleets, 120_000);
  return seconds(t0);
}

export function replicaLine(n: number, r: ReplicaRun): string {
  const perNode =
    r.rssKiB.reduce((a, b) => a + b, 0) /
    Math.max(
      1,
      r.owned.reduce((a, b) => a + b, 0),
    );
  // As issue 35 spells it: rss_per_node in KiB, no unit; each replica's CPU seconds are in the JSON result.
  return `fleet: N=${String(n)} replicas=${String(r.replicas)} publish=${r.publishS.toFixed(1)}s ceiling=${r.ceilingS.toFixed(1)}s ratio=${r.ratio.toFixed(2)} takeover=${r.takeoverS.toFixed(1)}s rss_per_node=${perNode.toFixed(1)}`;
}
