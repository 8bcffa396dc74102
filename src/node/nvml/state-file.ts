import { readFileSync } from 'node:fs';
import { parseChecked, withChecksum, writeDurably } from '../durable/file.js';
import { FakegpuError } from '../../errors.js';
import { MigStateSchema, type MigState, type MigStateStore } from '../../model/nvml/state.js';

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
    const checked = parseChecked(text);
    if (!checked.ok)
      throw new FakegpuError(
        this.path,
        `the NVML state file is ${checked.why}; delete it to start from the profile`,
      );
    const parsed = MigStateSchema.safeParse(checked.data);
    if (!parsed.success) {
      throw new FakegpuError(
        this.path,
        `the NVML state file is malformed (${parsed.error.issues[0]?.message ?? 'invalid'}); delete it to start from the profile`,
      );
    }
    return parsed.data;
  }

  /** A crash leaves either the old or the new state on disk, never half of one. */
  save(state: MigState): void {
    writeDurably(this.path, withChecksum(state), { mode: 0o600 });
  }
}
