import { FakegpuError, oneOf, show } from '../errors.js';
import { PRESETS } from './presets.js';
import type { Preset } from './types.js';

export { PRESETS } from './presets.js';
export type { Preset, PresetAspect } from './types.js';

export const PRESET_NAMES: readonly string[] = PRESETS.map((p) => p.name);

export function findPreset(name: string, field: string): Preset {
  const p = PRESETS.find((x) => x.name === name.trim().toLowerCase());
  if (!p)
    throw new FakegpuError(field, `unknown preset ${show(name)}; known presets: ${oneOf(PRESET_NAMES)}`);
  return p;
}
