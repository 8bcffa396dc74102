import { LEASE_DURATION_MS, RENEW_DEADLINE_MS } from '../../src/kube/lease.js';
import { shardOf } from '../../src/kube/sharding/ring.js';
import { KWOK_NODE_PREFIX } from '../../src/local-cluster/kwok-nodes.js';
import type { AuditedWrite } from './audit.js';

/**
 * Each shard's holders over time, read from the replicas' logs (`cluster up` appends every run of a
 * replica to one file, after a `=== <ISO time> <command>` line): a hold runs from "took a shard" to
 * "stopped writing shards" (logged once its writes in flight have ended), to the kill that ended its
 * process, to its exit when its stop took too long, or to now; a term of the single leader from
 * "leading" to "stopped leading" (also logged once its writes have ended). And which replica process
 * each pid was, so that the API server's audit log (which names the pid) can be judged against these
 * holds.
 */

/** The shard of a single leader's term: it writes every node, so it conflicts with every hold. */
export const LEADER = -1;

export interface Hold {
  /** The shard held, or `LEADER` for a term of the single leader ("leading" to "stopped leading"). */
  shard: number;
  /** `<replica>/<run>`: the run counts the process starts in the replica's log. */
  who: string;
  from: number;
  to: number;
}

export interface ReplicaLog {
  replica: number;
  text: string;
  /** When this suite killed the replica's process (epoch ms): a killed process cannot log its end. */
  kills: readonly number[];
  /** Whether the replica's last run is still alive. */
  alive: boolean;
}

export interface Holders {
  holds: Hold[];
  /** The replica process each pid was; a pid seen in several runs is the latest run's. */
  whoOfPid: Map<number, string>;
}

interface LogLine {
  time?: number;
  pid?: number;
  msg?: string;
  shard?: number;
  shards?: number[];
}

/** Whether two holds of different processes would have two writers on some node. */
export function conflict(x: Hold, y: Hold): boolean {
  return x.who !== y.who && (x.shard === y.shard || x.shard === LEADER || y.shard === LEADER);
}

export function readHolds(logs: readonly ReplicaLog[], now: number): Holders {
  const holds: Hold[] = [];
  /** A log kept across clusters holds old runs, whose pids a fresh machine hands out again. */
  const pids = new Map<number, { who: string; started: number }>();
  for (const { replica, text, kills, alive } of logs) {
    let run = 0;
    let started = 0;
    let open = new Map<number, number>();
    const who = (): string => `${String(replica)}/${String(run)}`;
    const closeAll = (at: number): void => {
      for (const [shard, from] of open) holds.push({ shard, who: who(), from, to: at });
      open = new Map();
    };
    for (const line of text.split('\n')) {
      if (line.startsWith('=== ')) {
        const next = Date.parse(line.slice(4, 28));
        closeAll(kills.filter((k) => k <= next).at(-1) ?? next);
        run++;
        started = next;
        continue;
      }
      const p = parse(line);
      if (p?.time === undefined) continue;
      if (p.pid !== undefined && (pids.get(p.pid)?.started ?? -1) <= started)
        pids.set(p.pid, { who: who(), started });
      if (p.msg === 'took a shard' && p.shard !== undefined) open.set(p.shard, p.time);
      if (p.msg === 'leading' && !open.has(LEADER)) open.set(LEADER, p.time);
      if (p.msg === 'stopped leading') {
        const from = open.get(LEADER);
        if (from !== undefined) holds.push({ shard: LEADER, who: who(), from, to: p.time });
        open.delete(LEADER);
      }
      // Its last line: the process exits at once, its connections (and what they still carried) with it.
      if (p.msg === 'did not stop in time; exiting') closeAll(p.time);
      if (p.msg === 'stopped writing shards')
        for (const k of p.shards ?? []) {
          const from = open.get(k);
          if (from !== undefined) holds.push({ shard: k, who: who(), from, to: p.time });
          open.delete(k);
        }
    }
    const killed = kills.at(-1);
    closeAll(killed !== undefined && !alive ? killed : now);
  }
  return { holds, whoOfPid: new Map([...pids].map(([pid, { who }]) => [pid, who])) };
}

function parse(line: string): LogLine | null {
  if (!line.startsWith('{')) return null;
  try {
    return JSON.parse(line) as LogLine;
  } catch {
    return null;
  }
}

const holdName = (h: Hold): string => (h.shard === LEADER ? 'leader' : `shard ${String(h.shard)}`);

/** Pairs of holds that had two writers on some node at once, and how long they overlapped in all. */
export function overlapsOf(
  holds: readonly Hold[],
  log: (line: string) => void,
): { pairs: number; ms: number } {
  let pairs = 0;
  let ms = 0;
  for (const x of holds)
    for (const y of holds)
      if (x.who < y.who && conflict(x, y) && x.from < y.to && y.from < x.to) {
        pairs++;
        ms += Math.min(x.to, y.to) - Math.max(x.from, y.from);
        if (pairs <= 5) log(`  ${x.who} (${holdName(x)}) and ${y.who} (${holdName(y)}) at once`);
      }
  return { pairs, ms };
}

/** The margin a successor waits out after a holder falls silent, at the shipped lease timings. */
const LEASE_MARGIN_MS = LEASE_DURATION_MS - RENEW_DEADLINE_MS;

/**
 * The API server's audited slice writes of the KWOK nodes judged, as they come, against the holds of
 * the process that sent each. A write received while its sender held neither the node's shard nor a
 * term is counted `outside` (a writer too many) when another process held the node at any time between
 * the end of its sender's hold and its arrival, when it came more than the lease margin after that end
 * (later than the protocol lets a successor wait), or when its sender never held the node. Else it is
 * `late`: bytes its sender sent in time that the server read after the sender gave up, aborted or died
 * (the server stamps a request when its handler starts, which on a loaded machine can be after the
 * client closed the connection). That is what the margin is for, as in client-go: no client can recall
 * bytes it has sent. The margin is counted from the logged end, which comes once the writes in flight
 * have ended, so after a fence it forgives a little more than the margin. A write whose sender no log
 * names yet waits up to 30 s for the log; after that it is a writer too many.
 */
export class WriteJudge {
  outside = 0;
  /** Writes judged: a run whose audit log held none proved nothing. */
  judged = 0;
  /** Received after their sender's hold, within the margin, while no other process held the node. */
  late = 0;
  /** The latest of those, after its sender's hold ended. */
  lateMaxMs = 0;
  private waiting: AuditedWrite[] = [];

  constructor(
    private readonly o: { since: number; shards: number; marginMs?: number; log: (line: string) => void },
  ) {}

  /** The writes received since the last call, and those still waiting; the count outside so far. */
  judge(received: readonly AuditedWrite[], { holds, whoOfPid }: Holders): number {
    const all = [...this.waiting, ...received];
    this.waiting = [];
    for (const w of all) {
      // Only fakegpu's writes of the KWOK nodes: the host node's plugin writes its own, and the suites
      // delete slices with kubectl.
      if (w.at < this.o.since || w.pid === null || !w.node.startsWith(KWOK_NODE_PREFIX)) continue;
      const who = whoOfPid.get(w.pid);
      if (who === undefined && Date.now() - w.at < 30_000) {
        this.waiting.push(w);
        continue;
      }
      this.judged++;
      const shard = shardOf(w.node, this.o.shards);
      const covers = (x: Hold): boolean => x.shard === LEADER || x.shard === shard;
      const mine = holds.filter((x) => x.who === who && covers(x));
      if (mine.some((x) => x.from <= w.at && w.at <= x.to)) continue;
      const ended = Math.max(-Infinity, ...mine.filter((x) => x.to < w.at).map((x) => x.to));
      const after = w.at - ended;
      // Another writer of the node at any time from the sender's end to the write's arrival: the write
      // landed after a newer writer's had begun (a shard handed back is taken at once, no margin between).
      const other = holds.some((x) => x.who !== who && covers(x) && x.from <= w.at && x.to >= ended);
      if (!other && after <= (this.o.marginMs ?? LEASE_MARGIN_MS)) {
        this.late++;
        this.lateMaxMs = Math.max(this.lateMaxMs, after);
        continue;
      }
      this.outside++;
      if (this.outside <= 5)
        this.o.log(
          `  ${w.verb} of node ${w.node}'s slice by ${who === undefined ? `process ${String(w.pid)}, no replica,` : `replica ${who}`} received at ${new Date(w.at).toISOString()}, outside its holds of shard ${String(shard)}${!Number.isFinite(after) ? ', which it never held' : other ? ' while another held it' : `, ${String(after)} ms after its hold ended`}`,
        );
    }
    return this.outside;
  }
}
