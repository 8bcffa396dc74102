import { FakegpuError, show } from '../../errors.js';
import type { Style } from './exposition.js';

/** The newest dcgm-exporter whose names and units are emulated: 4.9.0 renamed both. */
export const DCGM_EXPORTER_VERSION = '4.8.4';

/**
 * Which exposition a dcgm-exporter release serves, from its version as users write it (`4.8.2`) or as
 * its tags were until 4.8.4 (`4.6.0-4.8.3`, the DCGM version first).
 */
export function styleOf(text: string, field: string): Style {
  const m = /^(?:\d+\.\d+\.\d+-)?(\d+)\.(\d+)\.(\d+)$/.exec(text.trim());
  const bad = (why: string) => new FakegpuError(field, `${show(text)} ${why}`);
  if (!m) throw bad('is not a dcgm-exporter version; expected e.g. 4.8.4 or 4.6.0-4.8.3');
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const v = major * 1e6 + minor * 1e3 + patch;
  if (v >= 4_009_000)
    throw bad(
      `is not emulated: 4.9.0 renamed the default fields and changed their units; use ${DCGM_EXPORTER_VERSION} or older`,
    );
  if (v < 3_000_000) throw bad('is older than 3.0.0, which is not emulated');
  return v >= 4_008_003 ? 'current' : 'legacy';
}
