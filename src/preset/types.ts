import type { Source } from '../catalog/types.js';
import type { ProfileSpec } from './spec.js';

/** What a preset's facts rest on, per aspect, so docs/fidelity.md can say which are confirmed. */
export type PresetAspect = 'gpus' | 'busIds' | 'pcieRoots' | 'numa' | 'nics' | 'driver';

export interface Preset {
  name: string;
  /** The machine as its vendor sells it. */
  description: string;
  /**
   * The cloud's `node.kubernetes.io/instance-type` for this machine: a node with that label and no profile
   * or pool label is this preset (`instance-types.ts`). Absent: not a cloud instance (DGX).
   */
  instanceType?: string;
  spec: ProfileSpec;
  provenance: Record<PresetAspect, Source>;
}
