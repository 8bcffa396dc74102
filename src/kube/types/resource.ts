/**
 * The subset of `resource.k8s.io/v1` that fakegpu writes, with JSON field names exactly as the API
 * server serialises them. Optional fields are omitted, never `null`, so output compares byte for byte.
 */

export type DeviceAttribute =
  | { string: string }
  | { int: number }
  | { bool: boolean }
  | { version: string }
  /** DRAListTypeAttributes (KEP-5491, alpha in Kubernetes 1.36); fakegpu publishes only `ints`. */
  | { ints: number[] };

/** Kubernetes 1.34+ DRAConsumableCapacity: how much of a capacity one claim may consume. */
export interface CapacityRequestPolicy {
  default: string;
  validRange?: { min?: string; max?: string; step?: string };
}

export interface DeviceCapacity {
  value: string;
  requestPolicy?: CapacityRequestPolicy;
}

export interface Counter {
  value: string;
}

export interface CounterSet {
  name: string;
  counters: Record<string, Counter>;
}

export interface DeviceCounterConsumption {
  counterSet: string;
  counters: Record<string, Counter>;
}

/** `None` is informational; `NoSchedule` keeps new claims off; `NoExecute` also evicts their pods. */
export type DeviceTaintEffect = 'None' | 'NoSchedule' | 'NoExecute';

export interface DeviceTaint {
  key: string;
  value?: string;
  effect: DeviceTaintEffect;
  /** Stamped by the API server when a driver leaves it out, as NVIDIA's does. */
  timeAdded?: string;
}

export interface Device {
  name: string;
  attributes?: Record<string, DeviceAttribute>;
  capacity?: Record<string, DeviceCapacity>;
  consumesCounters?: DeviceCounterConsumption[];
  taints?: DeviceTaint[];
  /** DRAConsumableCapacity: several claims may hold the device (NVIDIA's ConsumableShares). */
  allowMultipleAllocations?: boolean;
}

/** An attribute's value of one type, or undefined when it is absent or of another type. */
export const stringOf = (a: DeviceAttribute | undefined): string | undefined =>
  a && 'string' in a ? a.string : undefined;
export const intOf = (a: DeviceAttribute | undefined): number | undefined =>
  a && 'int' in a ? a.int : undefined;
export const versionOf = (a: DeviceAttribute | undefined): string | undefined =>
  a && 'version' in a ? a.version : undefined;

export interface ResourcePool {
  name: string;
  generation: number;
  resourceSliceCount: number;
}

export interface ResourceSliceSpec {
  driver: string;
  pool: ResourcePool;
  nodeName: string;
  devices?: Device[];
  sharedCounters?: CounterSet[];
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  labels?: Record<string, string>;
}

export interface ResourceSlice {
  apiVersion: 'resource.k8s.io/v1';
  kind: 'ResourceSlice';
  metadata: ObjectMeta;
  spec: ResourceSliceSpec;
}

export interface List<T> {
  apiVersion: 'v1';
  kind: 'List';
  metadata: Record<string, never>;
  items: T[];
}

export { LIMITS } from './limits.js';
