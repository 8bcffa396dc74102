import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { FakegpuError } from '../errors.js';
import { MigStateSchema, type MigState, type MigStateStore } from './state.js';

/** MIG state on disk, so instances survive a plugin restart as they survive on a real GPU. */
export class FileMigStateStore implements MigStateStore {
  constructor(readonly path: string) {}

  load(): MigState | null {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if (e instanceof Error && 'code' in e && e.code === 'ENOENT') return null;
      throw e;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new FakegpuError(
        this.path,
        'the NVML state file is not JSON; delete it to start from the profile',
      );
    }
    const parsed = MigStateSchema.safeParse(json);
    if (!parsed.success) {
      throw new FakegpuError(
        this.path,
        `the NVML state file is malformed (${parsed.error.issues[0]?.message ?? 'invalid'}); delete it to start from the profile`,
      );
    }
    return parsed.data;
  }

  /** Write-then-rename: a crash leaves either the old or the new state, never half of one. */
  save(state: MigState): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.tmp-${process.pid}`;
    writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, this.path);
  }
}
