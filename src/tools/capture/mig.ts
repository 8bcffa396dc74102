import type { GiProfile, GpuModel } from '../../model/catalog/types.js';
import type { SmiXmlMigDevice } from './smi-xml.js';

/**
 * A MIG device as `nvidia-smi -q -x` shows it, named by the catalog: its GPU instance's profile is the
 * one with the same SM count and engines and (within rounding) memory, and its placement follows from the
 * GPU instance ID by the slot tree the driver numbers instances in (7g → 0, 4g/3g → 1-2, 2g → 3-6, 1g →
 * 7-14 on 8-slice parts), the rule `gpuInstanceId` in the mock NVML applies the other way.
 */

export interface IdentifiedInstance {
  profile: GiProfile;
  start: number;
}

const sameEngines = (p: GiProfile, d: SmiXmlMigDevice): boolean =>
  p.multiprocessors === d.multiprocessors &&
  p.decoders === d.decoders &&
  p.encoders === d.encoders &&
  p.jpegEngines === d.jpegEngines &&
  p.ofaEngines === d.ofaEngines;

/** nvidia-smi's framebuffer total for an instance falls a little under the profile's memory. */
const MEMORY_TOLERANCE = 0.05;

export function identifyInstance(
  model: GpuModel,
  d: SmiXmlMigDevice,
): { ok: IdentifiedInstance } | { error: string } {
  const mig = model.mig;
  if (!mig) return { error: `${model.key} has no MIG in the catalog` };
  const candidates = mig.profiles.filter(
    (p) => sameEngines(p, d) && Math.abs(p.memoryMiB - d.memoryMiB) <= p.memoryMiB * MEMORY_TOLERANCE,
  );
  // `+gfx` profiles have the same resources as plain ones; the plain one is what a capture without
  // graphics shows. Prefer the candidate whose placement the GI ID lands on.
  for (const profile of candidates.sort((a, b) => a.name.length - b.name.length)) {
    const size = profile.placementSize;
    const first = mig.memorySlices / size - 1;
    const start = (d.gpuInstanceId - first) * size;
    if (Number.isInteger(start) && profile.placements.includes(start)) return { ok: { profile, start } };
  }
  const seen = `${d.multiprocessors} SMs, ${d.memoryMiB} MiB, ${d.decoders} decoders, ${d.encoders} encoders, ${d.jpegEngines} JPEG, ${d.ofaEngines} OFA, GPU instance ${d.gpuInstanceId}`;
  return {
    error:
      candidates.length === 0
        ? `no MIG profile of ${model.key} in the catalog has ${seen}; its profiles: ${mig.profiles.map((p) => p.name).join(', ')}`
        : `${candidates.map((p) => p.name).join(' or ')} match ${seen}, but none has a placement for GPU instance ${d.gpuInstanceId}`,
  };
}
