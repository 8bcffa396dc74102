import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The TCP ports our processes listen on, known by their sockets' inodes: a port still listening after
 * its process was stopped is then told apart from one another cluster holds.
 */

/** Listening TCP sockets of this network namespace: inode → port. */
function listening(): Map<string, number> {
  const out = new Map<string, number>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl, local address:port in hex, remote, state (0A is LISTEN), queues, timer, retransmits, uid, timeout, inode.
      const c = line.trim().split(/\s+/);
      const port = c[1]?.split(':')[1];
      const inode = c[9];
      if (c[3] === '0A' && port !== undefined && inode !== undefined) out.set(inode, parseInt(port, 16));
    }
  }
  return out;
}

/** The open files of a process, as links; read through a live thread, as a zombie leader has none. */
function fdLinks(pid: number): string[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  for (const t of tasks) {
    const dir = `/proc/${pid}/task/${t}/fd`;
    let fds: string[];
    try {
      fds = readdirSync(dir);
    } catch {
      continue;
    }
    if (fds.length === 0) continue;
    return fds.flatMap((fd) => {
      try {
        return [readlinkSync(join(dir, fd))];
      } catch {
        return [];
      }
    });
  }
  return [];
}

/** The sockets the processes listen on (inode → port); read while they run. */
export function listeningSockets(pids: readonly number[]): Map<string, number> {
  const all = listening();
  const out = new Map<string, number>();
  for (const pid of pids) {
    for (const link of fdLinks(pid)) {
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      const port = inode === undefined ? undefined : all.get(inode);
      if (inode !== undefined && port !== undefined) out.set(inode, port);
    }
  }
  return out;
}

/** Resolves once none of the sockets listens, or after `waitMs` with the ports still listening. */
export async function socketsClosed(sockets: ReadonlyMap<string, number>, waitMs: number): Promise<number[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const now = listening();
    const open = [...sockets].filter(([inode]) => now.has(inode)).map(([, port]) => port);
    if (open.length === 0 || Date.now() >= deadline) return [...new Set(open)].sort((a, b) => a - b);
    await sleep(50);
  }
}
