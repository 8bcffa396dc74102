import { GI_PROFILE_ENUM, type GiProfileEnumName } from '../catalog/types.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

const ENUM_NAMES = new Map<number, GiProfileEnumName>(
  Object.entries(GI_PROFILE_ENUM).map(([k, v]) => [v, k as GiProfileEnumName]),
);

export function giEnumName(enumIndex: number): GiProfileEnumName | undefined {
  return ENUM_NAMES.get(enumIndex);
}

/** GPU slices of a GI profile enum, as go-nvlib maps them. */
export function giSlices(e: GiProfileEnumName): number {
  return Number(/^(\d+)_SLICE/.exec(e)?.[1] ?? 0);
}

function suffix(e: GiProfileEnumName): string {
  if (e.endsWith('_REV1')) return '+me';
  if (e.endsWith('_ALL_ME')) return '+me.all';
  if (e.endsWith('_GFX')) return '+gfx';
  if (e.endsWith('_NO_ME')) return '-me';
  return '';
}

/**
 * The GB figure of a MIG profile name, by go-nvlib's formula: the profile's share of total memory rounded
 * up to eighths, times total GiB rounded up. NVML's `memorySizeMB` is MiB.
 */
export function migMemoryGB(memorySizeMiB: number, totalBytes: bigint): number {
  const total = Number(totalBytes);
  const frac = Math.ceil(((memorySizeMiB * MiB) / total) * 8) / 8;
  const totGB = Math.ceil(total / GiB);
  return Math.round(frac * totGB);
}

/** The profile string (`1g.10gb+me`) go-nvlib builds for a GI profile whose compute instance spans it. */
export function migProfileName(e: GiProfileEnumName, memorySizeMiB: number, totalBytes: bigint): string {
  return `${giSlices(e)}g.${migMemoryGB(memorySizeMiB, totalBytes)}gb${suffix(e)}`;
}
