import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Toolchain } from './build.js';
import { env, kwokArgs } from './components.js';
import type { Layout } from './config.js';
import { EXTRA_KWOK_PROCESS, kwokControllersOf, kwokProcessName, partitionArgs } from './kwok-partition.js';
import { argsOf, forgetPid, isAlive, readPid, startDaemon, type Started } from './process.js';
import { kwokRuns, type State } from './state.js';
import { stopAndFree } from './stop.js';

/**
 * The KWOK controllers beyond the first (`--kwok-controllers`), as processes: the first is the component
 * `kwok` (components.ts); these are `kwok-1` … `kwok-<K-1>`, each its own pid file and log. None listens
 * on a port: KWOK serves only with --server-address or --node-port, which the cluster does not pass.
 */

/** Starts the controllers of partitions 1 … K-1; none with one controller. */
export function startExtraKwokControllers(
  l: Layout,
  t: Toolchain,
  s: State,
  log: (line: string) => void,
): Started[] {
  const k = kwokControllersOf(s);
  const out: Started[] = [];
  for (let p = 1; p < k; p++) {
    const name = kwokProcessName(p);
    log(`starting ${name}`);
    out.push(startDaemon(l.run, l.logs, name, join(t.bin, 'kwok'), kwokArgs(l, p, k), env(t)));
  }
  return out;
}

/** The names of the extra controllers' pid files in the run folder, whatever the state file says. */
export function extraKwokPidNames(l: Layout): string[] {
  let files: string[];
  try {
    files = readdirSync(l.run);
  } catch {
    return [];
  }
  return files
    .map((f) => f.replace(/\.pid$/, ''))
    .filter((n) => EXTRA_KWOK_PROCESS.test(n))
    .sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)));
}

/**
 * Stops every extra controller a pid file names, not only the state's K: a start that failed halfway, or a
 * state file rewritten by the next `up`, must not leave one running.
 */
export async function stopExtraKwokControllers(l: Layout, log: (line: string) => void): Promise<string[]> {
  const left: string[] = [];
  for (const name of extraKwokPidNames(l)) {
    const pid = readPid(l.run, name);
    // A pid reused by another program is not ours to stop: ours names its partition on its command line.
    const selector = partitionArgs(Number(name.slice('kwok-'.length)), 2)[0] ?? '';
    if (pid !== null && isAlive(pid) && argsOf(pid).includes(selector)) {
      log(`stopping ${name} (pid ${pid})`);
      left.push(...(await stopAndFree(name, pid)));
    }
    forgetPid(l.run, name);
  }
  return left;
}

export interface ExtraKwokStatus {
  name: string;
  pid: number | null;
  running: boolean;
  log: string;
}

/** The extra controllers the state asks for, running or not. */
export function extraKwokStatus(l: Layout, s: State | null): ExtraKwokStatus[] {
  if (!kwokRuns(s)) return [];
  return Array.from({ length: kwokControllersOf(s) - 1 }, (_, i) => {
    const name = kwokProcessName(i + 1);
    const pid = readPid(l.run, name);
    return { name, pid, running: pid !== null && isAlive(pid), log: join(l.logs, `${name}.log`) };
  });
}
