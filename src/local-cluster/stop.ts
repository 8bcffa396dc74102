import type { Layout } from './config.js';
import { argsOf, exeOf, forgetPid, isAlive, readPid, startedBy, stopTree } from './process.js';
import { listeningSockets, socketsClosed } from './sockets.js';
import { binaryOf, type ComponentName } from './state.js';

/** Our process, not an unrelated one that reused the pid of a stale pid file. */
function ours(name: ComponentName, pid: number): boolean {
  const exe = exeOf(pid);
  // Unreadable: trust the pid file.
  if (exe === null) return true;
  if (name.startsWith('fakegpu-')) {
    const a = argsOf(pid);
    return a.some((x) => x.endsWith('/bin/fakegpu.js')) && a.includes(name.slice('fakegpu-'.length));
  }
  // A binary rebuilt while it runs reads as deleted.
  return exe.replace(/ \(deleted\)$/, '').endsWith(`/${binaryOf(name)}`);
}

/**
 * Stops a process and what it started, then waits until the ports they listened on are closed, so
 * the next `up` or restart finds them free. Returns what is still running or listening.
 */
export async function stopAndFree(what: string, pid: number, graceMs = 10_000): Promise<string[]> {
  const sockets = listeningSockets([pid, ...startedBy(pid)]);
  const running = await stopTree(pid, graceMs);
  const open = await socketsClosed(sockets, 10_000);
  return [
    ...running.map((p) => `${what}: pid ${p} still runs after SIGKILL`),
    ...open.map((port) => `${what}: port ${port} still listens after its processes were stopped`),
  ];
}

/** Stops a component started from its pid file, and forgets the file. */
export async function stopComponent(
  l: Layout,
  name: ComponentName,
  log: (line: string) => void,
): Promise<string[]> {
  const pid = readPid(l.run, name);
  if (pid === null) return [];
  let left: string[] = [];
  if (isAlive(pid) && ours(name, pid)) {
    log(`stopping ${name} (pid ${pid})`);
    left = await stopAndFree(name, pid);
  }
  forgetPid(l.run, name);
  return left;
}
