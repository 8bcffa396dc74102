/**
 * NVIDIA's ConsumableShares (PR #1257): one device allocatable to several claims, each consuming part of
 * its `memory` capacity (or one of N `shares`). Read at NVIDIA v0.5.0
 * `cmd/gpu-kubelet-plugin/consumable_shares.go` (what is published) and `main.go` validateCLIFlags (the
 * flag and its refusals).
 */

import { FakegpuError } from '../../errors.js';
import type { Device, DeviceCapacity } from '../../kube/types/resource.js';
import { binaryQuantity, binaryQuantityValue, decimalQuantity, MiB } from '../../kube/types/quantity.js';
import type { FeatureGates } from '../feature-gates/gates.js';

/** `--consumable-shares` as NVIDIA's plugin reads it: off, by memory, unlimited, or N shares a device. */
export type ConsumableShares = 'disabled' | 'memory' | 'unlimited' | { shares: bigint };

export const SHARES_DISABLED: ConsumableShares = 'disabled';

/** Go's `math.MaxInt64`: `strconv.Atoi` refuses anything larger (out of range) on NVIDIA's 64-bit builds. */
const MAX_INT64 = 9223372036854775807n;

/** `strconv.Atoi`'s syntax: an optional sign and decimal digits, nothing else (no spaces, no `0x`). */
function atoi(text: string): bigint | null {
  if (!/^[+-]?[0-9]+$/.test(text)) return null;
  const n = BigInt(text);
  return n > MAX_INT64 || n < -MAX_INT64 - 1n ? null : n;
}

/**
 * The flag checked as NVIDIA's validateCLIFlags checks it, in its order: any value but `disabled`
 * needs the gate (even an empty one), then the value must be a mode or a positive integer.
 */
export function parseConsumableShares(
  text: string | undefined,
  gates: FeatureGates,
  field = '--consumable-shares',
): ConsumableShares {
  const raw = text ?? 'disabled';
  if (raw === 'disabled') return SHARES_DISABLED;
  if (!gates.ConsumableShares)
    throw new FakegpuError(field, '--consumable-shares requires feature gate ConsumableShares to be enabled');
  if (raw === 'memory' || raw === 'unlimited') return raw;
  const n = atoi(raw);
  // Go's %q: a JSON string is the same quoting for everything a flag can hold.
  if (n === null || n <= 0n)
    throw new FakegpuError(
      field,
      `invalid value for --consumable-shares: ${JSON.stringify(raw)} (must be 'disabled', 'memory', 'unlimited', or a positive integer)`,
    );
  return { shares: n };
}

/** The flag's text again, as it goes to a process or a chart (`4`, `memory`). */
export function sharesText(s: ConsumableShares): string {
  return typeof s === 'string' ? s : String(s.shares);
}

export function sharesEnabled(s: ConsumableShares | undefined): boolean {
  return s !== undefined && s !== 'disabled';
}

/** Bytes of a capacity fakegpu wrote with `binaryQuantity`. */
function bytesOf(value: string): bigint {
  const bytes = binaryQuantityValue(value);
  if (bytes === null) throw new Error(`consumable shares: capacity ${value} is not a binary quantity`);
  return bytes;
}

function memoryPolicy(mode: ConsumableShares, max: string): DeviceCapacity['requestPolicy'] {
  // NVIDIA: Kubernetes needs max and default to be multiples of step, hence memory rounded to 1Mi.
  return mode === 'memory'
    ? { default: max, validRange: { min: '1Mi', max, step: '1Mi' } }
    : { default: '0', validRange: { min: '0', max, step: '1Mi' } };
}

/**
 * A device as applyConsumableShares leaves it: allocatable to several claims, its `memory` rounded
 * down to whole MiB with a request policy, and with N shares a `shares` capacity. A device without
 * `memory` only gets allowMultipleAllocations, as NVIDIA's returns early.
 */
export function withConsumableShares(d: Device, mode: ConsumableShares): Device {
  if (mode === 'disabled') return d;
  const out: Device = { ...d, allowMultipleAllocations: true };
  const memory = d.capacity?.['memory'];
  if (!memory) return out;
  const max = binaryQuantity((bytesOf(memory.value) / MiB) * MiB);
  const capacity: Record<string, DeviceCapacity> = {
    ...d.capacity,
    memory: { value: max, requestPolicy: memoryPolicy(mode, max) },
  };
  if (typeof mode === 'object') {
    const n = decimalQuantity(mode.shares);
    capacity['shares'] = {
      value: n,
      requestPolicy: { default: '1', validRange: { min: '1', max: n, step: '1' } },
    };
  }
  // Keys in byte order, as the API server serialises the map ("shares" sorts after the rest here).
  out.capacity = Object.fromEntries(
    Object.entries(capacity).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  return out;
}
