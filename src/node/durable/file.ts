import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import writeFileAtomic from 'write-file-atomic';

/**
 * The node's state changes through these calls only, so a kill -9 at any line leaves each file either
 * as it was or as it was meant to be. write-file-atomic writes a temporary file beside the target,
 * fsyncs it and renames it over; the rename itself is durable only once the directory is fsynced,
 * which it does not do, so that step is ours. Temporary names end in a hex suffix, which the CDI
 * runtimes (that read `*.yaml` and `*.json` only) ignore, as they ignore the CDI library's own.
 */

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface WriteOptions {
  mode?: number;
  /**
   * false: atomic but not fsynced, for files made again from the checkpoint at every start (the
   * nvidia-smi views): a crash can lose such a write, never tear it, and the next start redoes it.
   * Fsyncing them made a prepare six times slower (bench/prepare).
   */
  durable?: boolean;
}

/** Replaces `path` with `data` atomically and durably: its directory is created and fsynced too. */
export function writeDurably(path: string, data: string, o: WriteOptions = {}): void {
  const dir = dirname(path);
  const durable = o.durable ?? true;
  mkdirSync(dir, { recursive: true });
  writeFileAtomic.sync(path, data, { mode: o.mode ?? 0o644, fsync: durable });
  if (durable) fsyncDir(dir);
}

/** A write refused because its target is not a plain file of ours (a link a container planted). */
export class UnsafeWriteError extends Error {}

/**
 * `writeDurably` for a folder a container can write (a daemon's `/imexd`), where write-file-atomic is
 * unsafe: it resolves a symbolic link at the target and writes where it points, and its temporary
 * name (a hash of pid and call count) can be guessed and planted as a link. Here a link at the target
 * is refused, and the temporary file gets a random name and is opened O_EXCL|O_NOFOLLOW, so a planted
 * link makes the open fail instead of being followed; the rename then replaces the name, never what a
 * link there might point to.
 */
export function writeNoFollow(path: string, data: string, o: { mode?: number } = {}): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  let kind: string | null = null;
  try {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) kind = 'a symbolic link';
    else if (!st.isFile()) kind = 'not a regular file';
  } catch {
    // Absent: nothing to refuse.
  }
  if (kind)
    throw new UnsafeWriteError(
      `refusing to write ${path}: it is ${kind}, and a folder a container can write is only ever given plain files`,
    );
  const tmp = `${path}.${randomBytes(8).toString('hex')}`;
  const mode = o.mode ?? 0o644;
  const fd = openSync(
    tmp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    try {
      // The umask may have narrowed the mode open was given; fchmod changes this file, not a link's target.
      fchmodSync(fd, mode);
      writeSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // Already renamed or gone.
    }
    throw e;
  }
  fsyncDir(dir);
}

/** Writes only when the content differs: a file a container bind-mounts keeps its inode when unchanged. */
export function writeIfChanged(path: string, data: string, o: WriteOptions = {}): boolean {
  let now: string | null = null;
  try {
    now = readFileSync(path, 'utf8');
  } catch {
    // Absent or unreadable: write it.
  }
  if (now === data) return false;
  writeDurably(path, data, o);
  return true;
}

/**
 * A folder of small files, made again from the checkpoint at every start (not fsynced). A new folder
 * appears whole, by one rename of a folder filled beside it; an existing one, which a container may
 * have bind-mounted, keeps its inode and has each changed file replaced in place.
 */
export function writeFolder(dir: string, files: Readonly<Record<string, string>>): void {
  if (!existsSync(dir)) {
    mkdirSync(dirname(dir), { recursive: true });
    const tmp = mkdtempSync(`${dir}.tmp-`);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(tmp, name), text);
    // mkdtemp makes 0700: a container running as another user must still read its view.
    chmodSync(tmp, 0o755);
    renameSync(tmp, dir);
    return;
  }
  for (const [name, text] of Object.entries(files)) writeIfChanged(join(dir, name), text, { durable: false });
}

/** Removes a file or a tree, and makes the removal durable; one already gone is not an error. */
export function removeDurably(path: string): void {
  rmSync(path, { recursive: true, force: true });
  try {
    fsyncDir(dirname(path));
  } catch {
    // The parent is gone too: nothing left to make durable.
  }
}

/**
 * A checksum over a JSON document, as the kubelet's checkpoint manager keeps one: a file whose bytes
 * were damaged after it was written (a bad disk, a hand edit) is refused instead of half-trusted.
 */
export function checksumOf(data: unknown): string {
  return `sha256:${createHash('sha256').update(JSON.stringify(data)).digest('hex')}`;
}

/** `{checksum, ...data}` as text, the checksum over `data` as JSON.stringify orders it. */
export function withChecksum(data: Record<string, unknown>): string {
  return `${JSON.stringify({ checksum: checksumOf(data), ...data }, null, 2)}\n`;
}

export type Checked =
  { ok: true; data: Record<string, unknown>; checksummed: boolean } | { ok: false; why: string };

/** Parses a file written by `withChecksum`; one without a checksum field is returned as unchecked. */
export function parseChecked(text: string): Checked {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, why: `not valid JSON (${e instanceof Error ? e.message : String(e)})` };
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    return { ok: false, why: 'not a JSON object' };
  const { checksum, ...data } = json as Record<string, unknown>;
  if (checksum === undefined) return { ok: true, data, checksummed: false };
  if (checksum !== checksumOf(data))
    return {
      ok: false,
      why: `damaged: its checksum ${JSON.stringify(checksum).slice(0, 80)} does not match its content`,
    };
  return { ok: true, data, checksummed: true };
}
