/**
 * The API server's own view of a bench phase, from its /metrics before and after: request latency of
 * the slices by verb, who else wrote meanwhile (KWOK's node leases among them), API Priority and
 * Fairness rejections and waits, and the Go runtime (CPU, GC, heap against GOMEMLIMIT, RSS). A bench's
 * client-side seconds cannot tell a slow server from a busy client or a third writer; these can.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FakegpuError } from '../src/errors.js';
import { cpuBetween, sampleCpu, type CpuSample } from './machine-cpu.js';
import type { Raw } from './support.js';

/** One sample: a metric's labels as written (`{a="b",c="d"}`, or '') and its value. */
interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition, by metric name; comments skipped. */
export type Exposition = Map<string, Sample[]>;

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Exposition {
  const out: Exposition = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] ?? ''] = l[2] ?? '';
    const list = out.get(m[1] ?? '') ?? [];
    list.push({ labels, value: Number(m[3]) });
    out.set(m[1] ?? '', list);
  }
  return out;
}

/** The sum of a metric's samples whose labels include `match`, grouped by the labels `by` names. */
export function sumBy(
  e: Exposition,
  name: string,
  match: Record<string, string | RegExp>,
  by: string[],
): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of e.get(name) ?? []) {
    const ok = Object.entries(match).every(([k, v]) =>
      typeof v === 'string' ? s.labels[k] === v : v.test(s.labels[k] ?? ''),
    );
    if (!ok) continue;
    const key = by.map((k) => s.labels[k] ?? '').join(' ');
    out.set(key, (out.get(key) ?? 0) + s.value);
  }
  return out;
}

const total = (e: Exposition, name: string): number => [...sumBy(e, name, {}, []).values()][0] ?? 0;

/** after − before, per key; keys only in `after` count from zero (a series first seen in the phase). */
function delta(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  return new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]));
}

/**
 * A quantile of a histogram's change between two scrapes, interpolated within its bucket as PromQL's
 * histogram_quantile does; NaN with no observations.
 */
export function quantileOfDelta(buckets: Map<string, number>, q: number): number {
  const sorted = [...buckets]
    .map(([le, n]) => ({ le: le === '+Inf' ? Infinity : Number(le), n }))
    .sort((a, b) => a.le - b.le);
  const count = sorted.at(-1)?.n ?? 0;
  if (count <= 0) return Number.NaN;
  const rank = q * count;
  let lower = 0;
  let below = 0;
  for (const b of sorted) {
    if (b.n >= rank) {
      if (b.le === Infinity) return lower;
      return lower + ((b.le - lower) * (rank - below)) / Math.max(b.n - below, 1e-9);
    }
    lower = b.le;
    below = b.n;
  }
  return lower;
}

export interface VerbLatency {
  verb: string;
  requests: number;
  p50S: number;
  p99S: number;
}

export interface ApiserverPhase {
  seconds: number;
  /** Cores' worth of CPU the API server used, and of it its garbage collector's. */
  cpuCores: number;
  gcCpuCores: number;
  /**
   * The collector's CPU by kind: marking by goroutines made to help (assist), by its own workers
   * (dedicated), and on processors with nothing else to run (idle, which fills time the server would
   * not have used); and the runtime's own idle time of GOMAXPROCS. Much idle marking means the server
   * waited, for etcd or its clients, more than it worked.
   */
  gcCoresByKind: { assist: number; dedicated: number; idle: number; pause: number };
  goIdleCores: number;
  /** etcd's answer time for the slices' creates, as the API server saw it. */
  etcdCreateP50S: number;
  gcCycles: number;
  /** At the end of the phase, MiB. */
  rssMiB: number;
  heapLiveMiB: number;
  heapGoalMiB: number;
  memoryLimitMiB: number;
  slices: VerbLatency[];
  /** Mutating requests per second by `resource verb`, the busiest first. */
  writesPerS: { what: string; perS: number }[];
  /** KWOK's node leases: requests per second by verb. */
  leasesPerS: Record<string, number>;
  /** APF requests rejected in the phase, by `priority_level reason`; none: empty. */
  apfRejected: Record<string, number>;
  /** APF's mean queue wait in the phase, ms, by priority level (levels that queued anything). */
  apfWaitMs: Record<string, number>;
}

const MIB = 2 ** 20;
const MUTATING = /^(POST|PUT|PATCH|DELETE|DELETECOLLECTION|APPLY)$/;

function sliceLatencies(before: Exposition, after: Exposition): VerbLatency[] {
  const name = 'apiserver_request_duration_seconds_bucket';
  const match = { resource: 'resourceslices' };
  const d = delta(sumBy(after, name, match, ['verb', 'le']), sumBy(before, name, match, ['verb', 'le']));
  const byVerb = new Map<string, Map<string, number>>();
  for (const [key, n] of d) {
    const [verb = '', le = ''] = key.split(' ');
    if (verb === 'WATCH') continue;
    const m = byVerb.get(verb) ?? new Map<string, number>();
    m.set(le, n);
    byVerb.set(verb, m);
  }
  return [...byVerb]
    .map(([verb, b]) => ({
      verb,
      requests: b.get('+Inf') ?? 0,
      p50S: quantileOfDelta(b, 0.5),
      p99S: quantileOfDelta(b, 0.99),
    }))
    .filter((x) => x.requests > 0)
    .sort((a, b) => b.requests - a.requests);
}

function etcdCreateP50(before: Exposition, after: Exposition): number {
  const name = 'etcd_request_duration_seconds_bucket';
  const match = { operation: 'create', resource: 'resourceslices' };
  return quantileOfDelta(delta(sumBy(after, name, match, ['le']), sumBy(before, name, match, ['le'])), 0.5);
}

function apfWaits(before: Exposition, after: Exposition): Record<string, number> {
  const sum = 'apiserver_flowcontrol_request_wait_duration_seconds_sum';
  const count = 'apiserver_flowcontrol_request_wait_duration_seconds_count';
  const s = delta(sumBy(after, sum, {}, ['priority_level']), sumBy(before, sum, {}, ['priority_level']));
  const c = delta(sumBy(after, count, {}, ['priority_level']), sumBy(before, count, {}, ['priority_level']));
  const out: Record<string, number> = {};
  for (const [level, n] of c) if (n > 0) out[level] = (1000 * (s.get(level) ?? 0)) / n;
  return out;
}

/** What the API server did between two scrapes `seconds` apart. */
export function apiserverPhase(before: Exposition, after: Exposition, seconds: number): ApiserverPhase {
  const d = (name: string): number => total(after, name) - total(before, name);
  const requests = 'apiserver_request_total';
  const writes = delta(
    sumBy(after, requests, { verb: MUTATING }, ['resource', 'verb']),
    sumBy(before, requests, { verb: MUTATING }, ['resource', 'verb']),
  );
  const leases = delta(
    sumBy(after, requests, { resource: 'leases' }, ['verb']),
    sumBy(before, requests, { resource: 'leases' }, ['verb']),
  );
  const rejected = delta(
    sumBy(after, 'apiserver_flowcontrol_rejected_requests_total', {}, ['priority_level', 'reason']),
    sumBy(before, 'apiserver_flowcontrol_rejected_requests_total', {}, ['priority_level', 'reason']),
  );
  const per = (n: number): number => n / Math.max(seconds, 1e-9);
  return {
    seconds,
    cpuCores: per(d('process_cpu_seconds_total')),
    gcCpuCores: per(d('go_cpu_classes_gc_total_cpu_seconds_total')),
    gcCoresByKind: {
      assist: per(d('go_cpu_classes_gc_mark_assist_cpu_seconds_total')),
      dedicated: per(d('go_cpu_classes_gc_mark_dedicated_cpu_seconds_total')),
      idle: per(d('go_cpu_classes_gc_mark_idle_cpu_seconds_total')),
      pause: per(d('go_cpu_classes_gc_pause_cpu_seconds_total')),
    },
    goIdleCores: per(d('go_cpu_classes_idle_cpu_seconds_total')),
    etcdCreateP50S: etcdCreateP50(before, after),
    gcCycles: d('go_gc_cycles_total_gc_cycles_total'),
    rssMiB: total(after, 'process_resident_memory_bytes') / MIB,
    heapLiveMiB: total(after, 'go_memstats_heap_alloc_bytes') / MIB,
    heapGoalMiB: total(after, 'go_gc_heap_goal_bytes') / MIB,
    memoryLimitMiB: total(after, 'go_gc_gomemlimit_bytes') / MIB,
    slices: sliceLatencies(before, after),
    writesPerS: [...writes]
      .filter(([, n]) => n > 0)
      .map(([what, n]) => ({ what, perS: per(n) }))
      .sort((a, b) => b.perS - a.perS),
    leasesPerS: Object.fromEntries([...leases].filter(([, n]) => n > 0).map(([v, n]) => [v, per(n)])),
    apfRejected: Object.fromEntries([...rejected].filter(([, n]) => n > 0)),
    apfWaitMs: apfWaits(before, after),
  };
}

const f = (n: number, d = 2): string => (Number.isFinite(n) ? n.toFixed(d) : '-');

/** A phase in a few lines for the bench's log. */
export function showPhase(p: ApiserverPhase): string[] {
  const slices = p.slices.map(
    (v) => `${v.verb} ${v.requests} p50 ${f(v.p50S * 1000, 0)} ms p99 ${f(v.p99S * 1000, 0)} ms`,
  );
  const writes = p.writesPerS.slice(0, 6).map((w) => `${w.what} ${f(w.perS, 1)}`);
  const leases = Object.entries(p.leasesPerS).map(([v, n]) => `${v} ${f(n, 1)}/s`);
  const rejected = Object.entries(p.apfRejected).map(([k, n]) => `${k} ${n}`);
  const waits = Object.entries(p.apfWaitMs).map(([k, ms]) => `${k} ${f(ms, 1)} ms`);
  return [
    `API server: CPU ${f(p.cpuCores)} cores (GC ${f(p.gcCpuCores)}), ${p.gcCycles} GC cycles in ${f(p.seconds, 0)} s; RSS ${f(p.rssMiB, 0)} MiB, heap ${f(p.heapLiveMiB, 0)} MiB, goal ${f(p.heapGoalMiB, 0)}, GOMEMLIMIT ${f(p.memoryLimitMiB, 0)}`,
    `API server: GC by kind assist ${f(p.gcCoresByKind.assist)}, dedicated ${f(p.gcCoresByKind.dedicated)}, idle ${f(p.gcCoresByKind.idle)}, pause ${f(p.gcCoresByKind.pause)} cores; Go idle ${f(p.goIdleCores)} cores; etcd create p50 ${f(p.etcdCreateP50S * 1000, 1)} ms`,
    `API server: resourceslices ${slices.join('; ') || 'none'}`,
    `API server: writes/s ${writes.join(', ') || 'none'}; node leases ${leases.join(', ') || 'none'}`,
    `API server: APF rejected ${rejected.join(', ') || 'none'}; APF wait ${waits.join(', ') || 'none'}`,
  ];
}

/** The API server's /metrics now (the bench's admin client is exempt from APF, so this never queues). */
export async function scrapeApiserver(raw: Raw): Promise<Exposition> {
  const r = await raw.send('GET', '/metrics', undefined, 'text/plain');
  if (r.status !== 200) throw new FakegpuError('bench', `API server /metrics: HTTP ${r.status}`);
  return parseExposition(r.text);
}

/**
 * A phase measured from the API server's side: `start` before it, `end` after it, which logs the
 * summary and returns it for the JSON result.
 */
/**
 * Where the API server's own profiles of each phase go: its allocations since start, read at the phase's
 * start and end (their difference is what the phase allocated, by call site), and a CPU profile of
 * `cpuS` seconds taken `cpuAfterS` into the phase, where both the ceiling and the fleet write steadily.
 */
export interface ProfileOptions {
  dir: string;
  cpuAfterS: number;
  cpuS: number;
}

export class ApiserverPhases {
  private before: Exposition = new Map();
  private t0 = 0;
  private cpu0: CpuSample = sampleCpu();
  private tag = '';
  private cpuTimer: NodeJS.Timeout | undefined;
  private cpuProfile: Promise<void> = Promise.resolve();

  constructor(
    private readonly raw: Raw,
    private readonly log: (line: string) => void,
    private readonly profiles?: ProfileOptions,
  ) {}

  /** `tag` names the phase's profile files (letters, digits and dashes). */
  async start(tag: string): Promise<void> {
    this.tag = tag;
    if (this.profiles) {
      const p = this.profiles;
      await this.saveProfile('/debug/pprof/allocs', `${tag}-allocs-start.pb.gz`);
      this.cpuTimer = setTimeout(() => {
        this.cpuProfile = this.saveProfile(`/debug/pprof/profile?seconds=${p.cpuS}`, `${tag}-cpu.pb.gz`);
      }, p.cpuAfterS * 1000);
    }
    this.before = await scrapeApiserver(this.raw);
    this.cpu0 = sampleCpu();
    this.t0 = performance.now();
  }

  async end(what: string): Promise<ApiserverPhase & { machine: ReturnType<typeof cpuBetween> }> {
    const seconds = (performance.now() - this.t0) / 1000;
    const cpu = cpuBetween(this.cpu0, sampleCpu());
    const p = { ...apiserverPhase(this.before, await scrapeApiserver(this.raw), seconds), machine: cpu };
    for (const line of showPhase(p)) this.log(`${what}, ${line}`);
    const by = Object.entries(cpu.cores).map(([g, c]) => `${g} ${f(c)}`);
    this.log(
      `${what}, machine: ${f(cpu.machineBusyCores)} of ${cpu.machineCores} cores busy; by process ${by.join(', ')}`,
    );
    if (this.profiles) {
      clearTimeout(this.cpuTimer);
      await this.saveProfile('/debug/pprof/allocs', `${this.tag}-allocs-end.pb.gz`);
      await this.cpuProfile;
      this.log(
        `${what}, API server profiles in ${this.profiles.dir}: go tool pprof -sample_index=alloc_space -top -diff_base ${this.tag}-allocs-start.pb.gz ${this.tag}-allocs-end.pb.gz`,
      );
    }
    return p;
  }

  /** A profile that cannot be had is logged, not fatal: it explains a run, it does not make one. */
  private async saveProfile(path: string, file: string): Promise<void> {
    const dir = this.profiles?.dir ?? '';
    try {
      const r = await this.raw.send('GET', path, undefined, '*/*');
      if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.text.slice(0, 200)}`);
      await writeFile(join(dir, file), r.bytes);
    } catch (e) {
      this.log(`API server profile ${path}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}
