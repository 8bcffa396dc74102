import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { removeDurably, writeDurably } from '../durable/file.js';
import { specFileName, type CdiSpec } from './spec.js';

/** A transient spec, replaced whole so a runtime never reads half of one. */
export function writeSpec(cdiRoot: string, claimUid: string, spec: CdiSpec): string {
  const path = join(cdiRoot, specFileName(claimUid, spec.kind));
  writeDurably(path, stringify(spec), { mode: 0o644 });
  return path;
}

export function removeSpec(cdiRoot: string, claimUid: string, kind: string): void {
  removeDurably(join(cdiRoot, specFileName(claimUid, kind)));
}

/**
 * The claim UIDs of every spec of `kind` under the CDI root, and the files that are no spec of a claim
 * (temporary files a crash left between write and rename), for the start-up sweep.
 */
export function listSpecs(cdiRoot: string, kind: string): { uids: Map<string, string>; debris: string[] } {
  const prefix = specFileName('', kind).replace(/\.yaml$/, '');
  const uids = new Map<string, string>();
  const debris: string[] = [];
  let names: string[];
  try {
    names = readdirSync(cdiRoot);
  } catch {
    return { uids, debris };
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    if (name.endsWith('.yaml')) uids.set(name.slice(prefix.length, -'.yaml'.length), join(cdiRoot, name));
    else debris.push(join(cdiRoot, name));
  }
  return { uids, debris };
}
