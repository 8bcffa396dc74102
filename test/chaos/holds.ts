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
