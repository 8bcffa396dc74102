import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { specFileName, type CdiSpec } from './spec.js';

/** Write-then-rename in the same directory, with a suffix runtimes ignore, as the CDI library does. */
export function writeSpec(cdiRoot: string, claimUid: string, spec: CdiSpec): string {
  mkdirSync(cdiRoot, { recursive: true });
  const path = join(cdiRoot, specFileName(claimUid, spec.kind));
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, stringify(spec), { mode: 0o644 });
  renameSync(tmp, path);
  return path;
}

export function removeSpec(cdiRoot: string, claimUid: string, kind?: string): void {
  rmSync(join(cdiRoot, specFileName(claimUid, kind)), { force: true });
}
