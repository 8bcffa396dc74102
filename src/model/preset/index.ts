import { FakegpuError, oneOf, show } from '../../errors.js';
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

/** The well-known node label clouds and Karpenter set to a node's instance type. */
export const INSTANCE_TYPE_LABEL = 'node.kubernetes.io/instance-type';

/** Instance type → preset, from the presets themselves: the one table an autoscaler's nodes go by. */
export const INSTANCE_TYPES: ReadonlyMap<string, Preset> = new Map(
  PRESETS.flatMap((p) => (p.instanceType ? [[p.instanceType, p] as const] : [])),
);

/** The preset of a cloud instance type, exactly as the cloud spells it; an unknown one names the known. */
export function presetForInstanceType(instanceType: string, field: string): Preset {
  const p = INSTANCE_TYPES.get(instanceType);
  if (!p)
    throw new FakegpuError(
      field,
      `unknown instance type ${show(instanceType)}; instance types with a preset: ${oneOf([...INSTANCE_TYPES.keys()])}`,
    );
  return p;
}
