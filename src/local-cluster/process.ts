import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Processes the cluster owns, tracked by pid files so `down` and `status` work from any shell. */

/** State, parent and session of a process or thread from its `stat` (the name may hold spaces and parentheses). */
function stat(path: string): { state: string; ppid: number; session: number } | null {
  try {
    const text = readFileSync(path, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: f[0] ?? '', ppid: Number(f[1]), session: Number(f[3]) };
  } catch {
    return null;
  }
}

/**
 * Whether any thread of the process still runs. The leader of a multi-threaded process turns zombie as
 * soon as its own thread exits, while the others still tear the process down, holding its memory and
 * its listening sockets: Go's daemons (etcd, kube-apiserver) stay like that for a while after SIGTERM.
 */
export function isAlive(pid: number): boolean {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return false;
  }
  return tasks.some((t) => {
    const s = stat(`/proc/${pid}/task/${t}/stat`);
    return s !== null && s.state !== 'Z' && s.state !== 'X';
  });
}

export interface Started {
  name: string;
  pid: number;
  log: string;
}

export function startDaemon(
  runDir: string,
  logDir: string,
  name: string,
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Started {
  mkdirSync(runDir, { recursive: true });
  mkdirSync(logDir, { recursive: true });
  const log = join(logDir, `${name}.log`);
  const fd = openSync(log, 'a');
  writeFileSync(fd, `\n=== ${new Date().toISOString()} ${bin} ${args.join(' ')}\n`);
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd], env });
  closeSync(fd);
  child.unref();
  if (child.pid === undefined) throw new Error(`${name} did not start`);
  writeFileSync(join(runDir, `${name}.pid`), `${child.pid}\n`);
  return { name, pid: child.pid, log };
}

export function readPid(runDir: string, name: string): number | null {
  const f = join(runDir, `${name}.pid`);
  if (!existsSync(f)) return null;
  const n = Number(readFileSync(f, 'utf8').trim());
  return Number.isInteger(n) && n > 0 ? n : null;
}

export function forgetPid(runDir: string, name: string): void {
  rmSync(join(runDir, `${name}.pid`), { force: true });
}

async function exited(pids: readonly number[], waitMs: number): Promise<number[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const left = pids.filter(isAlive);
    if (left.length === 0 || Date.now() >= deadline) return left;
    await sleep(50);
  }
}

function signal(pids: readonly number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // Gone already.
    }
  }
}

/**
 * SIGTERM, then SIGKILL to those still running after `graceMs`; resolves once every one has exited,
 * or after `killWaitMs` more with the pids that have not (a process stuck in the kernel outlives SIGKILL).
 */
export async function stopProcesses(
  pids: readonly number[],
  graceMs = 10_000,
  killWaitMs = 10_000,
): Promise<number[]> {
  const alive = pids.filter(isAlive);
  signal(alive, 'SIGTERM');
  const stubborn = await exited(alive, graceMs);
  if (stubborn.length === 0) return [];
  signal(stubborn, 'SIGKILL');
  return exited(stubborn, killWaitMs);
}

/**
 * What `pid` started: its descendants, and the processes of the session it leads. Our daemons are
 * started as session leaders, so their children stay in that session even once orphaned; and a
 * session's id is its leader's pid, which Linux does not hand out again while the session lives.
 */
export function startedBy(pid: number): number[] {
  const procs = new Map<number, { ppid: number; session: number }>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid || Number(e) === pid) continue;
    const s = stat(`/proc/${e}/stat`);
    if (s) procs.set(Number(e), s);
  }
  const out = new Set([...procs].filter(([, s]) => s.session === pid).map(([p]) => p));
  for (let parents = new Set([pid]); parents.size > 0;) {
    const children = [...procs].filter(([p, s]) => parents.has(s.ppid) && !out.has(p)).map(([p]) => p);
    for (const c of children) out.add(c);
    parents = new Set(children);
  }
  return [...out];
}

/**
 * Stops `pid`, then whatever it started and left running: the parent first, as a supervisor may stop
 * its own children cleanly. Resolves with the pids that outlived SIGKILL.
 */
export async function stopTree(pid: number, graceMs = 10_000, childGraceMs = 2000): Promise<number[]> {
  // Collected before the parent goes: its orphans are re-parented and no longer found as descendants,
  // and its pid may be handed out again.
  const children = startedBy(pid);
  const left = await stopProcesses([pid], graceMs);
  return [...left, ...(await stopProcesses(children, childGraceMs))];
}

/** The process's arguments, argv[0] first; empty once it is gone. */
export function argsOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  } catch {
    return [];
  }
}

/** Pids whose command line mentions `needle` (the shims containerd daemonises, found by our socket path). */
export function pidsMentioning(needle: string): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e) && Number(e) !== process.pid)
    .map(Number)
    .filter((pid) => argsOf(pid).some((a) => a.includes(needle)));
}

/** The binary a pid runs, to tell our process from an unrelated one that reused the pid. */
export function exeOf(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return null;
  }
}

export function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
