/** The run's settings, from the flags, as every part of the bench reads them. */
import { logger } from '../support.js';
import type { Variant } from './claims.js';
import type { Shape } from './shape.js';

export const log = logger('bench/sched');

export interface Config {
  /** `--nodes`; with `--kubeconfig` only checked where given (`nodesGiven`). */
  nodes: number;
  nodesGiven: boolean;
  profile: string;
  variant: Variant;
  /** `--dynamic-mig`, or implied by `--variant mig`. */
  dynamicMig: boolean;
  migProfile: string;
  fill: number;
  /** Fill pods created per second; 0: as fast as `inFlight` allows. */
  fillQps: number;
  churnS: number;
  churnQps: number;
  churnRuntimeS: number;
  inFlight: number;
  /** An existing cluster's kubeconfig (absolute); undefined: the bench's own cluster. */
  kubeconfig: string | undefined;
  /** `--node-selector`, trimmed. */
  selector: string;
  shape: Shape;
  /** The selector as a pod's nodeSelector or node affinity. */
  placement: Record<string, unknown>;
  /** Where the bench's own cluster lives. */
  dir: string;
  keep: boolean;
}
