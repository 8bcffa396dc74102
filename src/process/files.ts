// Every file and stream the CLI reads, and every file it writes, goes through here: reads stop at a
// named size, so /dev/zero or `yes |` is one line and not an abort of the whole process, and a
// file-system error is one line naming the path and what the errno means.
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { FakegpuError, show } from '../errors.js';

export const MiB = 1024 * 1024;

/** The most fakegpu reads of one kind of input; `what` names the kind in the refusal. */
export interface ReadLimit {
  bytes: number;
  what: string;
}

/** What the errno of a failed file-system call means, as `strerror` says it, for one-line messages. */
const MEANINGS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  EROFS: 'read-only file system',
  EEXIST: 'exists',
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  ENAMETOOLONG: 'file name too long',
  ELOOP: 'too many symbolic links',
  ENXIO: 'no such device or address',
  EINVAL: 'invalid argument',
  EIO: 'input/output error',
  EFBIG: 'file too large',
  EMFILE: 'too many open files',
  EBUSY: 'device or resource busy',
};

export function errnoOf(e: unknown): string {
  return e instanceof Error && 'code' in e && typeof e.code === 'string' ? e.code : 'unreadable';
}

/** `ENOENT: no such file or directory`; the bare code where it has no meaning written here. */
export function errnoText(e: unknown): string {
  const code = errnoOf(e);
  const meaning = MEANINGS[code];
  return meaning ? `${code}: ${meaning}` : code;
}

/** Waits without spinning: standard input opened non-blocking by a parent answers EAGAIN until data comes. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** At most `cap` + 1 bytes of `fd`: one more than allowed tells a file over the limit from one at it. */
function readCapped(fd: number, cap: number): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  const chunk = Buffer.allocUnsafe(Math.min(cap + 1, MiB));
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, chunk, 0, Math.min(chunk.length, cap + 1 - total), null);
    } catch (e) {
      if (errnoOf(e) !== 'EAGAIN') throw e;
      pause(10);
      continue;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(chunk.subarray(0, n)));
    total += n;
    if (total > cap) break;
  }
  return Buffer.concat(chunks, total);
}

function tooLarge(field: string, name: string, limit: ReadLimit): FakegpuError {
  return new FakegpuError(
    field,
    `${show(name)} is larger than ${limit.bytes / MiB} MiB, the most fakegpu reads for ${limit.what}`,
  );
}

/**
 * The text of `path`, or of standard input where `path` is a number (0), held to `limit`. A regular file
 * over the limit is refused by its size before a byte is read; a pipe or a device (`<(cmd)`, /dev/zero)
 * is read up to the limit and refused past it; standard input and pipes are waited for as `cat` waits. `o.name` is how the input is named in messages.
 */
export function readBounded(
  path: string | number,
  field: string,
  limit: ReadLimit,
  o: { name?: string; noun?: string; hint?: string } = {},
): string {
  const shown = o.name ?? (typeof path === 'number' ? 'stdin' : path);
  let fd: number | undefined;
  try {
    // Non-blocking, so that a FIFO nobody writes reads as empty instead of waiting for ever in open().
    fd = typeof path === 'number' ? path : openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (st.isFile() && st.size > limit.bytes) throw tooLarge(field, shown, limit);
    const data = readCapped(fd, limit.bytes);
    if (data.length > limit.bytes) throw tooLarge(field, shown, limit);
    return data.toString('utf8');
  } catch (e) {
    if (e instanceof FakegpuError) throw e;
    const noun = o.noun === undefined ? '' : `${o.noun} `;
    throw new FakegpuError(field, `cannot read ${noun}${show(shown)} (${errnoOf(e)})${o.hint ?? ''}`);
  } finally {
    if (fd !== undefined && typeof path !== 'number') closeSync(fd);
  }
}

/**
 * A file that another library opens itself (a kubeconfig), checked first to be one it can read whole
 * and small: a regular file within `limit`. Pipes are refused: such a file is read more than once.
 */
export function checkSmallFile(path: string, field: string, limit: ReadLimit): void {
  let st;
  try {
    st = statSync(path);
  } catch {
    return; // The reader's own error names it as before.
  }
  if (st.isFile()) {
    if (st.size > limit.bytes) throw tooLarge(field, path, limit);
    return;
  }
  throw new FakegpuError(field, `${show(path)} is not a regular file; give ${limit.what} as a file`);
}

/**
 * `mkdir -p` that always returns: Node's recursive mkdir loops for ever where a parent both does not
 * exist and cannot be made with ENOENT (any path under /proc), so each part is made on its own.
 */
export function makeDirectory(dir: string, field: string): void {
  const full = resolve(dir);
  const parts = full.split(sep).filter((p) => p !== '');
  let at: string = sep;
  for (const part of parts) {
    at = at === sep ? `${sep}${part}` : `${at}${sep}${part}`;
    try {
      mkdirSync(at);
    } catch (e) {
      if (errnoOf(e) !== 'EEXIST') throw outputError(field, at, e);
      if (!isDirectory(at))
        throw new FakegpuError(field, `cannot write under ${show(at)} (ENOTDIR: it is not a directory)`);
    }
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function outputError(field: string, path: string, e: unknown): FakegpuError {
  return new FakegpuError(field, `cannot write ${show(path)} (${errnoText(e)})`);
}

/** Writes `text` to `path`; a file-system error is one line naming the path and the errno's meaning. */
export function writeOutput(path: string, text: string, field: string): void {
  try {
    writeFileSync(path, text);
  } catch (e) {
    throw outputError(field, path, e);
  }
}

/**
 * `root`/`name` for a name that comes from input (a node's, a driver's): refused unless it is one plain
 * file name that stays in `root`, so `../../x` in a capture never writes outside the output folder.
 */
export function pathUnder(root: string, name: string, field: string): string {
  const path = resolve(root, name);
  const rel = relative(resolve(root), path);
  if (name === '' || name.includes('/') || name.includes('\\') || rel.startsWith('..') || isAbsolute(rel))
    throw new FakegpuError(
      field,
      `${show(name)} cannot name a file under ${show(root)}; expected a plain file name`,
    );
  return path;
}
