// Profile files read from disk or standard input: the one edge where a MachineProfile enters from a
// file; parsing and folding stay in the pure model (src/model/profile).
import { oneOf } from '../errors.js';
import { findPreset, PRESET_NAMES } from '../model/preset/index.js';
import {
  isProfileFile,
  profileFromText,
  profileSource,
  type ResolvedProfile,
  STDIN,
} from '../model/profile/load.js';
import { MiB, readBounded, type ReadLimit } from './files.js';

/** Hand-written, a MachineProfile of 255 GPUs each spelled out is under 100 KiB. */
const PROFILE_LIMIT: ReadLimit = { bytes: 4 * MiB, what: 'a MachineProfile' };

/** `ref` is a preset name or a path to a MachineProfile YAML file. */
export function resolveProfile(ref: string, field = '--profile'): ResolvedProfile {
  if (!isProfileFile(ref)) {
    const preset = findPreset(ref, field);
    return { name: preset.name, preset: preset.name, spec: preset.spec };
  }
  const text = readBounded(ref === STDIN ? 0 : ref, field, PROFILE_LIMIT, {
    name: profileSource(ref),
    noun: 'profile file',
    hint: `; give a preset name (${oneOf(PRESET_NAMES)}) or a YAML file`,
  });
  return profileFromText(text, profileSource(ref));
}
