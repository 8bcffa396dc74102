import { FakegpuError, show } from '../../errors.js';

/** A version as NVIDIA's driver publishes it: three numeric parts, no leading zeros. */
export interface Semver {
  major: number;
  minor: number;
  patch: number;
}

const LENIENT = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/;

/**
 * Above this a part no longer prints as the digits it was read from (`1e+23`), which no semver parser, the
 * API server's included, accepts; real versions are nowhere near it.
 */
const MAX_PART = Number.MAX_SAFE_INTEGER;

function parts(m: RegExpExecArray, text: string, field: string, example: string): Semver {
  const v = { major: Number(m[1]), minor: Number(m[2] ?? 0), patch: Number(m[3] ?? 0) };
  if (v.major > MAX_PART || v.minor > MAX_PART || v.patch > MAX_PART) {
    throw new FakegpuError(
      field,
      `${show(text)} has a number above ${MAX_PART}; each part of a version must be at most that, e.g. ${show(example)}`,
    );
  }
  return v;
}

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
  return parts(m, text, field, '580.126.20');
}

const KUBERNETES = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/**
 * An API server's version as its `/version` gitVersion reads — `v1.34.2-eks-113cf36`, `v1.33.1+k3s1`,
 * `1.35.0-rc.1` — taken as Kubernetes' `version.ParseGeneric` takes it: major.minor[.patch], with the
 * pre-release and build suffixes that distributions add ignored.
 */
export function parseKubernetesVersion(text: string, field: string): Semver {
  const m = KUBERNETES.exec(text.trim());
  if (!m) {
    throw new FakegpuError(
      field,
      `${show(text)} is not a Kubernetes version; expected <major>.<minor>[.<patch>] as the API server reports it, e.g. "1.35.0" or "v1.34.2-eks-113cf36"`,
    );
  }
  return parts(m, text, field, '1.35.0');
}

export function formatSemver(v: Semver): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

export function compareSemver(a: Semver, b: Semver): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}
