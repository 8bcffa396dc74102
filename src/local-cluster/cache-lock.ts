import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { duration, type Log } from '../process/progress.js';

/**
 * One writer per component folder of the build cache at a time: two `cluster up` on one machine (or a
 * test beside a user's cluster) would otherwise build or fetch the same binaries into the same folder,
 * one renaming the other's half-written file or stamping what it did not make. The lock is a file made
 * with O_EXCL holding the holder's pid; a holder that died leaves a file whose pid is gone, which the
 * next one takes over. Whoever waits says so, naming the holder, every 30 s.
 */

interface Holder {
  pid: number;
  what: string;
  since: number;
  /** Two holders in one process (two builds awaited together) are told apart by it. */
  token: string;
}

const POLL_MS = 250;
const SAY_EVERY_MS = 30_000;
/** A lock file that does not parse is one being written, or debris: debris once it is this old. */
const DEBRIS_MS = 10_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function holderOf(path: string): Holder | 'gone' | 'debris' | 'young' {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return 'gone';
  }
  try {
    const h = JSON.parse(text) as Holder;
    if (Number.isInteger(h.pid) && h.pid > 0) return h;
  } catch {
    // Written in one call, but a reader may come between its open and its write.
  }
  try {
    return Date.now() - statSync(path).mtimeMs > DEBRIS_MS ? 'debris' : 'young';
  } catch {
    return 'gone';
  }
}

/** Runs `fn` holding `path`; waits while a live process holds it. */
export async function withCacheLock<T>(
  path: string,
  what: string,
  log: Log,
  fn: () => Promise<T>,
  sayEveryMs = SAY_EVERY_MS,
): Promise<T> {
  const started = Date.now();
  let said = started;
  const me: Holder = { pid: process.pid, what, since: started, token: randomBytes(8).toString('hex') };
  for (;;) {
    try {
      writeFileSync(path, JSON.stringify(me), { flag: 'wx' });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const h = holderOf(path);
    if (h === 'debris' || (typeof h === 'object' && !alive(h.pid))) {
      rmSync(path, { force: true });
      continue;
    }
    if (Date.now() - said >= sayEveryMs) {
      said = Date.now();
      const who = typeof h === 'object' ? `pid ${String(h.pid)} (${h.what})` : 'another process';
      log(
        `waiting for ${who} to finish with ${what}; ${duration(Math.round((Date.now() - started) / 1000))} so far`,
      );
    }
    await sleep(POLL_MS);
  }
  try {
    return await fn();
  } finally {
    const h = holderOf(path);
    if (typeof h === 'object' && h.token === me.token) rmSync(path, { force: true });
  }
}
