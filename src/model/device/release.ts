import { FakegpuError, oneOf, show } from '../../errors.js';

/**
 * Releases of NVIDIA's DRA driver whose published slices differ. Only what changes the output is
 * modelled; see docs/fidelity.md for the history.
 */
export const RELEASES = {
  /** nvcr.io chart v25.12.x: vendored DRA library 0.34 names slices `<node>-<driver>-`. */
  '25.12': { numaNode: false, indexedSliceNames: false, adminAccessChecks: false, domainIDChecks: false },
  /** v0.4.x: DRA library 0.36, slices named `<hex index>-<driver>-<node>-`. */
  '0.4': { numaNode: false, indexedSliceNames: true, adminAccessChecks: false, domainIDChecks: false },
  /**
   * v0.5.0: the slices of NVIDIA main @ 9593204, unchanged in the tag; adds `resource.kubernetes.io/numaNode`,
   * prepare refuses admin access on anything but a full GPU, or with a device config (PR #1335), and a
   * ComputeDomain config's domainID must be a path segment and a label value (PR #1368).
   */
  '0.5': { numaNode: true, indexedSliceNames: true, adminAccessChecks: true, domainIDChecks: true },
} as const;
export type DriverRelease = keyof typeof RELEASES;
export const DEFAULT_RELEASE: DriverRelease = '0.5';

export function parseRelease(text: string, field: string): DriverRelease {
  const t = text.trim().replace(/^v/, '');
  if (t in RELEASES) return t as DriverRelease;
  if (t === 'main')
    throw new FakegpuError(
      field,
      `"main": no readable source shows NVIDIA's main after v0.5.0 (docs/fidelity.md says what was tried); give 0.5, the newest release`,
    );
  throw new FakegpuError(
    field,
    `unknown NVIDIA DRA driver release ${show(text)}; known releases: ${oneOf(Object.keys(RELEASES))}`,
  );
}
