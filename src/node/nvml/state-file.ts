import { readFileSync } from 'node:fs';
import { parseChecked, withChecksum, writeDurably } from '../durable/file.js';
import { FakegpuError } from '../../errors.js';
import { MigStateSchema, type MigState, type MigStateStore } from '../../model/nvml/state.js';
import { RESET_HINT } from '../checkpoint/checkpoint.js';

/**
 * MIG state on disk, so instances survive a plugin restart as they survive on a real GPU. A damaged
 * file is treated as a damaged checkpoint is, with the same hint and the same flag: the two describe
 * one node (a claim's MIG device is an instance here), so neither can be started over without the other.
 */
export class FileMigStateStore implements MigStateStore {
  /** Why the file on disk was set aside for the profile's state (`reset`), if it was. */
  resetFrom: string | null = null;

  constructor(
    readonly path: string,
    private readonly reset = false,
  ) {}

  load(): MigState | null {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if (e instanceof Error && 'code' in e && e.code === 'ENOENT') return null;
      throw e;
    }
    try {
      return this.parse(text);
    } catch (e) {
      if (!this.reset || !(e instanceof FakegpuError)) throw e;
      // The caller saves the profile's state over it, and the claims go with it (`resetFrom`).
      this.resetFrom = e.detail;
      return null;
    }
  }

  private parse(text: string): MigState {
    const checked = parseChecked(text);
    if (!checked.ok)
      throw new FakegpuError(this.path, `the NVML state file is ${checked.why}; ${RESET_HINT}`);
    const parsed = MigStateSchema.safeParse(checked.data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new FakegpuError(
        this.path,
        `the NVML state file is malformed (${issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid'}); ${RESET_HINT}`,
      );
    }
    return parsed.data;
  }

  /** A crash leaves either the old or the new state on disk, never half of one. */
  save(state: MigState): void {
    writeDurably(this.path, withChecksum(state), { mode: 0o600 });
  }
}
