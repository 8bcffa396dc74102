import { FakegpuError, oneOf, show } from '../../errors.js';
import { GPU_MODELS } from './models.js';
import type { GiProfile, GpuModel } from './types.js';

export { GPU_MODELS } from './models.js';
export type * from './types.js';

const byAlias = new Map<string, GpuModel>();
for (const m of GPU_MODELS) {
  byAlias.set(m.key.toLowerCase(), m);
  byAlias.set(m.name.toLowerCase(), m);
}

export const MODEL_KEYS: readonly string[] = GPU_MODELS.map((m) => m.key);

/** Accepts the catalog key (`H100-SXM5-80GB`) or the exact NVML name (`NVIDIA H100 80GB HBM3`). */
export function findModel(keyOrName: string, field: string): GpuModel {
  const m = byAlias.get(keyOrName.trim().toLowerCase());
  if (!m)
    throw new FakegpuError(field, `unknown GPU model ${show(keyOrName)}; known models: ${oneOf(MODEL_KEYS)}`);
  return m;
}

export function findGiProfile(model: GpuModel, name: string, field: string): GiProfile {
  if (!model.mig) {
    throw new FakegpuError(field, `${model.key} (${model.name}) does not support MIG`);
  }
  const p = model.mig.profiles.find((x) => x.name === name.trim());
  if (!p) {
    throw new FakegpuError(
      field,
      `${model.key} has no MIG profile ${show(name)}; its profiles: ${oneOf(model.mig.profiles.map((x) => x.name))}`,
    );
  }
  return p;
}
