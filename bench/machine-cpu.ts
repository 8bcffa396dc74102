/**
 * Where a bench phase's CPU went on this machine, by process, from /proc: on a 2-core machine whose
 * cores are full, one process's share is every other's loss, so a phase slower than another is
 * explained by this budget, not by its own client's seconds alone.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** Clock ticks per second of /proc's times (USER_HZ; 100 on Linux everywhere that matters). */
const HZ = 100;

/** CPU seconds by process group: control-plane components by name, this bench, the fleet, the rest. */
export type CpuSample = { at: number; byGroup: Map<string, number>; machineBusy: number };

const GROUPS: Record<string, string> = {
  'kube-apiserver': 'kube-apiserver',
  etcd: 'etcd',
  'kube-controller': 'kube-controller-manager',
  'kube-scheduler': 'kube-scheduler',
  kwok: 'kwok',
  kubelet: 'kubelet',
  containerd: 'containerd',
};

function groupOf(pid: number, comm: string): string {
  const g = GROUPS[comm];
  if (g !== undefined) return g;
  if (pid === process.pid) return 'bench';
  if (comm === 'node' || comm.startsWith('node')) {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (args.includes('fakegpu.js\0fleet')) return 'fakegpu fleet';
  }
  return 'other';
}

/** utime + stime of a /proc stat line, in seconds; `comm` may hold spaces and parentheses. */
export function statSeconds(stat: string): number {
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of the line are 12 and 13 of what follows the comm's closing parenthesis.
  return (Number(rest[11]) + Number(rest[12])) / HZ;
}

export function sampleCpu(): CpuSample {
  const byGroup = new Map<string, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const pid = Number(d);
      const comm = readFileSync(`/proc/${d}/comm`, 'utf8').trim();
      const s = statSeconds(readFileSync(`/proc/${d}/stat`, 'utf8'));
      const g = groupOf(pid, comm);
      byGroup.set(g, (byGroup.get(g) ?? 0) + s);
    } catch {
      // A process that ended while being read.
    }
  }
  const [cpu = ''] = readFileSync('/proc/stat', 'utf8').split('\n');
  const t = cpu.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busy = t.reduce((a, b) => a + b, 0) - (t[3] ?? 0) - (t[4] ?? 0);
  return { at: performance.now(), byGroup, machineBusy: busy / HZ };
}

/**
 * Cores each group used between two samples, the busiest first, and the machine's busy cores of all
 * it has. A process that started or ended between them counts what it used while seen.
 */
export function cpuBetween(
  a: CpuSample,
  b: CpuSample,
): { cores: Record<string, number>; machineBusyCores: number; machineCores: number } {
  const s = (b.at - a.at) / 1000;
  const cores: [string, number][] = [];
  for (const [g, v] of b.byGroup) {
    const used = Math.max(0, v - (a.byGroup.get(g) ?? 0)) / s;
    if (used >= 0.005) cores.push([g, used]);
  }
  cores.sort((x, y) => y[1] - x[1]);
  return {
    cores: Object.fromEntries(cores.map(([g, v]) => [g, Math.round(v * 1000) / 1000])),
    machineBusyCores: (b.machineBusy - a.machineBusy) / s,
    machineCores: cpus().length,
  };
}

/** A thread's time so far on a core and waiting in the run queue for one, in ms (the kernel's schedstat). */
export interface ThreadTimes {
  ranMs: number;
  waitedMs: number;
}

/**
 * What the kernel says of a process's main thread, its event loop's: null where /proc has no schedstat
 * (not Linux, or the process gone). A delay of the loop longer than the thread ran around it was not
 * the loop's own work; the time it waited for a core says how much of it the machine took.
 */
export function loopThreadTimes(pid: number): ThreadTimes | null {
  try {
    const [ran, waited] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(/\s+/);
    const t = { ranMs: Number(ran) / 1e6, waitedMs: Number(waited) / 1e6 };
    return Number.isFinite(t.ranMs) && Number.isFinite(t.waitedMs) ? t : null;
  } catch {
    return null;
  }
}
