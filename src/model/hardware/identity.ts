import { createHash } from 'node:crypto';
import type { Machine } from './machine.js';

function uuidFrom(...parts: string[]): string {
  const h = createHash('sha256').update(parts.join('\0')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * A GPU's UUID is burned into the board, so ours is a pure function of where the board is: the node and
 * its bus ID, and which board it is. Same node and profile give the same UUIDs on every run; different nodes never share one.
 */
export function gpuUuid(nodeName: string, busId: string, model: string): string {
  return `GPU-${uuidFrom('gpu', nodeName, busId, model)}`;
}

/**
 * A machine's GPU UUIDs for any node of its profile: those derived from the machine's node name are
 * derived again for `node`; those the profile fixed stay. Which are derived is worked out once.
 */
export function nodeUuids(machine: Machine): (node: string) => string[] {
  const derived = machine.gpus.map((hw) => hw.uuid === gpuUuid(machine.nodeName, hw.busId, hw.model.key));
  return (node) =>
    machine.gpus.map((hw, i) => (derived[i] === true ? gpuUuid(node, hw.busId, hw.model.key) : hw.uuid));
}

/** MIG UUIDs are minted by the driver when the instance is created; ours depend on what was created where. */
export function migUuid(parentUuid: string, gpuInstanceId: number, computeInstanceId: number): string {
  return `MIG-${uuidFrom('mig', parentUuid, String(gpuInstanceId), String(computeInstanceId))}`;
}

/** A netdev's MAC is in its EEPROM; ours is locally administered, derived from the node and bus ID. */
export function nicMac(nodeName: string, busId: string): string {
  const h = createHash('sha256').update(['nic', nodeName, busId].join('\0')).digest();
  const bytes = [...h.subarray(0, 6)];
  bytes[0] = ((bytes[0] ?? 0) & 0xfc) | 0x02;
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/**
 * A rack's NVLink domain: its cluster UUID, and a clique number of the kind sites assign (real ones seen
 * are small integers such as 388 or 2478), both stable functions of the rack's name.
 */
export function rackFabric(rack: string): { clusterUuid: string; cliqueId: number } {
  const h = createHash('sha256').update(['fabric', rack].join('\0')).digest();
  return { clusterUuid: uuidFrom('fabric', rack), cliqueId: 1 + (h.readUInt16BE(0) % 32767) };
}
