import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { kwokNodeNames, mustKubectl } from '../support/cluster.js';

/**
 * What both fleet chaos suites (one leader, shards) check after each disruption: every KWOK node has
 * exactly one complete pool per driver (slice count and generation agree), every present fault's GPU is
 * tainted, and the slices stay still for a quiet window (two writers with any difference rewrite each
 * other's forever). Faults come and go between disruptions.
 */

const SETTLE_MS = 120_000;
const QUIET_MS = 5_000;

interface Slice {
  metadata: { resourceVersion: string };
  spec: {
    driver: string;
    nodeName?: string;
    pool: { name: string; generation: number; resourceSliceCount: number };
    devices?: { name: string; taints?: { key: string; value?: string }[] }[];
  };
}

export class FleetSlices {
  /** Faults present: node and GPU index, each an XID 79 on that GPU. */
  readonly faults = new Map<string, { node: string; index: number }>();
  readonly kwok: string[];

  constructor(
    readonly e: Exports,
    kwokNodes: number,
    private readonly random: () => number,
  ) {
    this.kwok = kwokNodeNames(e);
    if (this.kwok.length !== kwokNodes) throw new Error(`${this.kwok.length} KWOK nodes, want ${kwokNodes}`);
  }

  slices(): Slice[] {
    return (JSON.parse(mustKubectl(this.e, ['get', 'resourceslices', '-o', 'json'])) as { items: Slice[] })
      .items;
  }

  /** What is wrong with the slices now: nodes without a complete GPU pool, inconsistent pools, untainted faults. */
  check(): { lost: string[]; stale: string[] } {
    const all = this.slices();
    const pools = new Map<string, Slice[]>();
    for (const x of all) {
      const k = `${x.spec.driver}/${x.spec.pool.name}`;
      pools.set(k, [...(pools.get(k) ?? []), x]);
    }
    const lost = this.kwok.filter((n) => !pools.has(`gpu.nvidia.com/${n}`));
    const stale: string[] = [];
    for (const [k, xs] of pools) {
      const gens = new Set(xs.map((x) => x.spec.pool.generation));
      const counts = new Set(xs.map((x) => x.spec.pool.resourceSliceCount));
      if (gens.size !== 1 || counts.size !== 1 || [...counts][0] !== xs.length) stale.push(k);
    }
    const byNode = new Map<string, Slice[]>();
    for (const x of all) byNode.set(x.spec.nodeName ?? '', [...(byNode.get(x.spec.nodeName ?? '') ?? []), x]);
    for (const [name, f] of this.faults) {
      const d = (byNode.get(f.node) ?? [])
        .flatMap((x) => x.spec.devices ?? [])
        .find((x) => x.name === `gpu-${f.index}`);
      if (!d?.taints?.some((t) => t.key === 'gpu.nvidia.com/xid' && t.value === '79'))
        stale.push(`fault ${name}`);
    }
    return { lost, stale };
  }

  async settled(): Promise<{ lost: string[]; stale: string[] }> {
    let last = this.check();
    const until = Date.now() + SETTLE_MS;
    while ((last.lost.length > 0 || last.stale.length > 0) && Date.now() < until) {
      await sleep(2_000);
      last = this.check();
    }
    return last;
  }

  /**
   * Whether the slices come to stay still (no write at all for a window) within a minute: a new writer's
   * own publish ends, two writers with any difference between them never do.
   */
  async quiet(): Promise<boolean> {
    const rvs = (): string =>
      this.slices()
        .map((x) => x.metadata.resourceVersion)
        .sort()
        .join(',');
    const until = Date.now() + 60_000;
    while (Date.now() < until) {
      const before = rvs();
      await sleep(QUIET_MS);
      if (rvs() === before) return true;
    }
    return false;
  }

  fakegpu(...args: string[]): void {
    const p = spawnSync(
      process.execPath,
      [join(REPO_ROOT, 'bin', 'fakegpu.js'), ...args, `--kubeconfig=${this.e.KUBECONFIG}`],
      { encoding: 'utf8' },
    );
    if (p.status !== 0) throw new Error(`fakegpu ${args.join(' ')}: ${p.stderr.trim()}`);
  }

  churnFaults(cycle: number): string {
    if (this.faults.size > 0 && this.random() < 0.3) {
      this.fakegpu('fault', 'clear', '--all');
      this.faults.clear();
      return 'faults cleared';
    }
    const node = this.kwok[Math.floor(this.random() * this.kwok.length)] ?? '';
    const index = Math.floor(this.random() * 8);
    const name = `chaos-${cycle}-${node}-${index}`;
    this.fakegpu('fault', 'inject', '--name', name, '--node', node, '--index', String(index), '--xid', '79');
    this.faults.set(name, { node, index });
    return `fault on ${node}/gpu-${index}`;
  }
}

/** The flags both fleet chaos suites take from `scripts/chaos.mjs`, checked. */
export function chaosFlags(extra: Record<string, { type: 'string'; default: string }> = {}): {
  dir: string;
  node: string;
  kwokNodes: number;
  cycles: number;
  seed: number;
  resultFile: string;
  extra: Record<string, string | undefined>;
} {
  const { values: a } = parseArgs({
    options: {
      dir: { type: 'string' },
      node: { type: 'string' },
      'kwok-nodes': { type: 'string', default: '1000' },
      cycles: { type: 'string', default: '50' },
      seed: { type: 'string', default: String(Date.now() % 1_000_000) },
      result: { type: 'string' },
      ...extra,
    },
  });
  if (!a.dir || !a.node || !a.result) {
    process.stderr.write('fleet-chaos: --dir, --node and --result are needed\n');
    process.exit(2);
  }
  const values = a as Record<string, string | undefined>;
  return {
    dir: a.dir,
    node: a.node,
    kwokNodes: Number(a['kwok-nodes']),
    cycles: Number(a.cycles),
    seed: Number(a.seed),
    resultFile: a.result,
    extra: Object.fromEntries(Object.keys(extra).map((k) => [k, values[k]])),
  };
}

export const chaosLog = (line: string): void => {
  process.stderr.write(`fleet-chaos: ${line}\n`);
};

/**
 * The cycles: faults churned, one disruption (`hit` says what it did), then the slices' checks; the
 * result file after each, and the process's exit code at the end.
 */
export async function runCycles(o: {
  fs: FleetSlices;
  cycles: number;
  resultFile: string;
  hit: (cycle: number) => Promise<string>;
  duplicates: () => number;
  takeovers: readonly number[];
  cleanUp: () => void;
  /** More figures for the result file, read at each save. */
  extra?: () => Record<string, number>;
}): Promise<never> {
  const result = {
    cycles: 0,
    lost: 0,
    duplicate: 0,
    stale: 0,
    takeoverP99: 0,
    aborted: null as string | null,
  };
  const save = (): void => {
    const sorted = [...o.takeovers].sort((x, y) => x - y);
    result.takeoverP99 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0;
    result.duplicate = o.duplicates();
    writeFileSync(o.resultFile, JSON.stringify({ ...result, ...o.extra?.() }));
  };
  o.fs.fakegpu('fault', 'clear', '--all');
  // A cluster directory keeps its etcd, and with it the slices of an earlier run: deleted, so that the
  // first disruption comes in the middle of publishing every node, whatever the directory held.
  mustKubectl(o.fs.e, ['delete', 'resourceslices', '--all', '--wait=false']);
  try {
    for (let c = 0; c < o.cycles; c++) {
      const what = o.fs.churnFaults(c);
      const done = await o.hit(c);
      const r = await o.fs.settled();
      const still = await o.fs.quiet();
      result.cycles++;
      result.lost += r.lost.length;
      result.stale += r.stale.length + (still ? 0 : 1);
      save();
      chaosLog(
        `cycle ${c + 1}/${o.cycles}: ${what}; ${done}; lost ${r.lost.length}, stale ${r.stale.length}${still ? '' : ', slices still changing'}, duplicate ${result.duplicate}`,
      );
      if (r.lost.length + r.stale.length > 0)
        chaosLog(`  e.g. ${[...r.lost, ...r.stale].slice(0, 5).join(', ')}`);
    }
  } catch (err) {
    result.aborted = err instanceof Error ? err.message : String(err);
    chaosLog(`aborted: ${result.aborted}`);
  } finally {
    o.cleanUp();
    try {
      o.fs.fakegpu('fault', 'clear', '--all');
    } catch {
      // The cluster goes down next; its faults with it.
    }
    save();
  }
  process.exit(result.aborted === null ? 0 : 1);
}
