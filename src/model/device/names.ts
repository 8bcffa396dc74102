/** Kubernetes-safe names exactly as the real driver cleans them (`toRFC1123Compliant` in its mig.go). */
export function toRfc1123(name: string): string {
  let s = name.toLowerCase().replace(/[^a-z0-9-.]/g, '-');
  s = s.replace(/^-+|-+$/g, '');
  if (s.endsWith('.')) s = s.slice(0, -1);
  return s.slice(0, 253);
}

/** Full GPUs are named by NVML minor number (the N of /dev/nvidiaN), not by index. */
export function gpuDeviceName(minor: number): string {
  return `gpu-${minor}`;
}

/**
 * `gpu-<parentMinor>-mig-<profile without dots>-<GI profile id>-<placement start>`; dots go before the
 * cleanup, so `1g.10gb+me` becomes `1g10gb-me`.
 */
export function migDeviceName(
  parentMinor: number,
  profile: string,
  giProfileId: number,
  start: number,
): string {
  return `gpu-${parentMinor}-mig-${toRfc1123(profile.replaceAll('.', ''))}-${giProfileId}-${start}`;
}

/** `migDeviceName` read back: the parent's minor, the GI profile id and the placement start; null: not one. */
export function parseMigDeviceName(name: string): { minor: number; profileId: number; start: number } | null {
  const m = /^gpu-(\d+)-mig-[a-z0-9-]+?-(\d+)-(\d+)$/.exec(name);
  if (!m) return null;
  return { minor: Number(m[1]), profileId: Number(m[2]), start: Number(m[3]) };
}

export function counterSetName(minor: number): string {
  return toRfc1123(`${gpuDeviceName(minor)}-counter-set`);
}

/** Capacity names become counter names the way the driver converts them: camelCase → dns-label. */
export function camelToDns(name: string): string {
  return toRfc1123(name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2'));
}

export function memorySliceCounter(i: number): string {
  return `memory-slice-${i}`;
}
