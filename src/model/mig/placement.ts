import type { GiProfile, GpuModel } from '../catalog/types.js';

/** A GPU instance as the hardware sees it: a profile at a placement (start memory slice). */
export interface Placed {
  profile: GiProfile;
  start: number;
}

export function slicesOf(p: Placed): number[] {
  return Array.from({ length: p.profile.placementSize }, (_, i) => p.start + i);
}

export function overlaps(a: Placed, b: Placed): boolean {
  return a.start < b.start + b.profile.placementSize && b.start < a.start + a.profile.placementSize;
}

const MEDIA = ['decoders', 'encoders', 'jpegEngines', 'ofaEngines'] as const;
type Media = (typeof MEDIA)[number];

/** Media engines are physical units; a `+me` or `+me.all` profile takes ones no other instance can have. */
function mediaBudget(model: GpuModel): Record<Media, number> {
  const profiles = model.mig?.profiles ?? [];
  const max = (k: Media): number => Math.max(0, ...profiles.map((p) => p[k]));
  return {
    decoders: max('decoders'),
    encoders: max('encoders'),
    jpegEngines: max('jpegEngines'),
    ofaEngines: max('ofaEngines'),
  };
}

/**
 * Why the GPU would refuse to create `candidate` next to `existing` (NVML's INSUFFICIENT_RESOURCES or
 * INVALID_ARGUMENT), or null if it fits. These are the hardware rules — placements, instance limits, media
 * engines — and deliberately not the DRA counters, so tests can check the counters against them.
 */
export function refusal(model: GpuModel, existing: readonly Placed[], candidate: Placed): string | null {
  const { profile, start } = candidate;
  if (!profile.placements.includes(start)) {
    return `placement ${start} is not valid for ${profile.name}; valid starts: ${profile.placements.join(', ')}`;
  }
  const clash = existing.find((e) => overlaps(e, candidate));
  if (clash) {
    return `${profile.name}@${start} (memory slices ${range(candidate)}) overlaps ${clash.profile.name}@${clash.start} (memory slices ${range(clash)})`;
  }
  const same = existing.filter((e) => e.profile.id === profile.id).length;
  if (same >= profile.instances) {
    return `${profile.name} allows at most ${profile.instances} instance(s) per GPU`;
  }
  const budget = mediaBudget(model);
  for (const k of MEDIA) {
    const used = existing.reduce((sum, e) => sum + e.profile[k], 0);
    if (used + profile[k] > budget[k]) {
      return `${profile.name}@${start} needs ${profile[k]} ${k} but only ${budget[k] - used} of ${budget[k]} are free`;
    }
  }
  return null;
}

function range(p: Placed): string {
  const s = slicesOf(p);
  return s.length === 1 ? `${s[0]}` : `${s[0]}-${s[s.length - 1]}`;
}

/** The first placement, in `-lgipp` order, where the profile fits; what `nvidia-smi mig -cgi` does without one. */
export function firstFit(model: GpuModel, existing: readonly Placed[], profile: GiProfile): Placed | null {
  for (const start of profile.placements) {
    const c = { profile, start };
    if (refusal(model, existing, c) === null) return c;
  }
  return null;
}
