// Profile files read from disk or standard input: the one edge where a MachineProfile enters from a
// file; parsing and folding stay in the pure model (src/model/profile).
import { readFileSync } from 'node:fs';
import { FakegpuError, oneOf, show } from '../errors.js';
import { findPreset, PRESET_NAMES } from '../model/preset/index.js';
import {
  isProfileFile,
  profileFromText,
  profileSource,
  type ResolvedProfile,
  STDIN,
} from '../model/profile/load.js';

/** A file's text, or one line naming the field, the path and why it cannot be read. */
export function readText(path: string, field: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    const why = e instanceof Error && 'code' in e ? String(e.code) : 'unreadable';
    throw new FakegpuError(field, `cannot read ${show(path)} (${why})`);
  }
}

/** `ref` is a preset name or a path to a MachineProfile YAML file. */
export function resolveProfile(ref: string, field = '--profile'): ResolvedProfile {
  if (!isProfileFile(ref)) {
    const preset = findPreset(ref, field);
    return { name: preset.name, preset: preset.name, spec: preset.spec };
  }
  let text: string;
  try {
    text = readFileSync(ref === STDIN ? 0 : ref, 'utf8');
  } catch (e) {
    const why = e instanceof Error && 'code' in e ? String(e.code) : 'unreadable';
    throw new FakegpuError(
      field,
      `cannot read profile file ${show(profileSource(ref))} (${why}); give a preset name (${oneOf(PRESET_NAMES)}) or a YAML file`,
    );
  }
  return profileFromText(text, profileSource(ref));
}
