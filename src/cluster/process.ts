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

/** Processes the cluster owns, tracked by pid files so `down` and `status` work from any shell. */

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie still answers kill(0); it is not running.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
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

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopPid(pid: number, graceMs = 10_000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return;
    await sleep(100);
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  while (isAlive(pid)) await sleep(50);
}

/** Pids whose command line mentions `needle` (the shims containerd daemonises, found by our socket path). */
export function pidsMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8');
      if (cmd.includes(needle)) out.push(Number(e));
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
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
