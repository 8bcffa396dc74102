import type { Source } from '../catalog/types.js';
import type { ProfileSpec } from './spec.js';

/** What a preset's facts rest on, per aspect, so docs/fidelity.md can say which are confirmed. */
export type PresetAspect = 'gpus' | 'busIds' | 'pcieRoots' | 'numa' | 'nics' | 'driver';

export interface Preset {
  name: string;
  /** The machine as its vendor sells it. */
  description: string;
  spec: ProfileSpec;
  provenance: Record<PresetAspect, Source>;
}
