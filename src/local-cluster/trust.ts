import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { FakegpuError } from '../errors.js';
import type { Toolchain } from './build.js';

/**
 * The cluster runs as root, from binaries and files in its cache and its directory. With `sudo -E` those
 * can be the invoking user's (`~/.cache`), which that user, or anything running as them, can replace
 * between two runs: the next `cluster up` would run their binary as root. So, as root, every path the
 * cluster executes from or keeps its files in must be root's alone: it and each directory above it owned
 * by root and writable by no group or other user (a directory above with the sticky bit, as /tmp, is
 * fine: no one but root can rename root's entries in it).
 */

const WRITABLE_BY_OTHERS = 0o022;
const STICKY = 0o1000;

/** The account name of a uid for the error line, from /etc/passwd; the number alone where there is none. */
function ownerName(uid: number): string {
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.split(':')[2] === String(uid));
    const name = line?.split(':')[0];
    return name ? `uid ${uid} (${name})` : `uid ${uid}`;
  } catch {
    return `uid ${uid}`;
  }
}

/**
 * Why `path` is not `uid`'s alone, or null. Each existing directory from the root down is checked, and
 * `path` itself; links are followed to what they name, which is checked the same way.
 */
export function untrustedReason(path: string, uid: number): string | null {
  const chain: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    chain.unshift(p);
    if (p === dirname(p)) break;
  }
  for (const p of chain) {
    if (!existsSync(p)) break;
    // A link's own mode means nothing; the folder holding it was checked, what it names is checked here.
    if (lstatSync(p).isSymbolicLink()) {
      const why = untrustedReason(realpathSync(p), uid);
      if (why !== null) return why;
      continue;
    }
    const s = statSync(p);
    if (s.uid !== uid && s.uid !== 0) return `${p} is owned by ${ownerName(s.uid)}`;
    const shared = (s.mode & WRITABLE_BY_OTHERS) !== 0;
    const last = p === chain[chain.length - 1];
    if (shared && (last || !s.isDirectory() || (s.mode & STICKY) === 0))
      return `${p} is ${(s.mode & 0o002) !== 0 ? 'world' : 'group'}-writable (mode ${(s.mode & 0o7777).toString(8)})`;
  }
  return null;
}

const ALLOWED =
  'running as root, fakegpu runs binaries and keeps the cluster only in paths root alone can change (owned by root, not group- or world-writable, every directory above them too)';

/** As root, refuses a path that is not root's alone, in one line: the path, its owner or mode, the rule. */
export function refuseUntrusted(field: string, path: string, hint: string): void {
  if (process.geteuid?.() !== 0) return;
  const why = untrustedReason(path, 0);
  if (why !== null) throw new FakegpuError(field, `${why}; ${ALLOWED}; ${hint}`);
}

/** As root, every binary of the toolchain, and the folders that hold them, must be root's alone. */
export function refuseUntrustedToolchain(t: Toolchain): void {
  if (process.geteuid?.() !== 0) return;
  const hint = 'rebuild them in a cache root owns (FAKEGPU_CACHE)';
  for (const dir of [t.bin, t.cniBin]) {
    refuseUntrusted('cluster binaries', dir, hint);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) refuseUntrusted('cluster binaries', join(dir, name), hint);
  }
}
