import type { Source } from '../catalog/types.js';
import type { ProfileSpec } from './machine-spec.js';

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
  /** The instance as its cloud sells it, for an autoscaler's list of instance types; with `instanceType`. */
  instance?: InstanceSize;
  spec: ProfileSpec;
  provenance: Record<PresetAspect, Source>;
}

/** What an autoscaler knows of an instance type before it launches one (Karpenter's KWOK provider file). */
export interface InstanceSize {
  vcpus: number;
  memoryMiB: number;
  /** The cloud's default pods per node (AWS: the VPC CNI's ENI limit). */
  maxPods: number;
  architecture: 'amd64' | 'arm64';
  /** On-demand price per hour in US dollars (AWS: us-east-1). */
  pricePerHour: number;
  /** Where the sizes come from; the price's own source when it differs. */
  source: Source;
  priceSource: Source;
}
