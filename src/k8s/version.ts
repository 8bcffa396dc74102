import { FakegpuError, show } from '../errors.js';

/** A version as NVIDIA's driver publishes it: three numeric parts, no leading zeros. */
export interface Semver {
  major: number;
  minor: number;
  patch: number;
}

const LENIENT = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/;

/**
 * Parses the way Masterminds' `semver.NewVersion` does for the inputs NVML gives: one to three numeric
 * parts, missing parts are zero and leading zeros are dropped (`580.95.05` → `580.95.5`).
 */
export function parseLenientVersion(text: string, field: string): Semver {
  const m = LENIENT.exec(text.trim());
  if (!m) {
    throw new FakegpuError(
      field,
      `${show(text)} is not a version; expected numbers separated by dots, e.g. "580.126.20"`,
    );
  }
  return { major: Number(m[1]), minor: Number(m[2] ?? 0), patch: Number(m[3] ?? 0) };
}

export function formatSemver(v: Semver): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

export function compareSemver(a: Semver, b: Semver): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}
