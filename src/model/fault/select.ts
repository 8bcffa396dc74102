import { createHash } from 'node:crypto';
import type { GpuFaultSpec } from './resource.js';
import { selectorMatches } from './selector.js';

/**
 * Which of a node's GPUs a fault hits. Pure and deterministic: the plugin on a node and the fleet decide
 * on their own, without coordination, and a fault written once hits the same GPUs however often it is
 * read, by whichever process.
 */

export interface FaultGpu {
  index: number;
  /** The published device name, `gpu-N`. */
  name: string;
  uuid: string;
  /** Static MIG devices on this GPU. */
  mig: { name: string; gpuInstanceId: number; computeInstanceId: number }[];
}

export interface FaultTarget {
  gpu: FaultGpu;
  /** Set when the fault names a static MIG device. */
  mig?: FaultGpu['mig'][number];
}

export function matchesNode(
  spec: GpuFaultSpec,
  node: { name: string; labels: Record<string, string> },
): boolean {
  if (spec.nodeName !== undefined) return spec.nodeName === node.name;
  return spec.nodeSelector !== undefined && selectorMatches(spec.nodeSelector, node.labels);
}

/**
 * A GPU's draw in [0, 1): the first 4 bytes (big-endian) of sha256("<seed>/<node>/<uuid>") over 2^32.
 * Keyed by node and UUID rather than index, so that the draws of one node are independent of
 * another's, and by seed, so that another seed picks other GPUs.
 */
export function faultHash(seed: number, nodeName: string, uuid: string): number {
  return createHash('sha256').update(`${seed}/${nodeName}/${uuid}`).digest().readUInt32BE(0) / 2 ** 32;
}

/**
 * The fault's targets on one node, ordered by GPU index, and what it names that the node does not have
 * (for the status message). `devices` and `indexes` name targets; `count` takes the GPUs of the lowest
 * draws (ties by index), `fraction` each GPU whose draw is below it, and neither every GPU. An XID with
 * gpuInstanceId/computeInstanceId is on that static MIG device of each GPU: named GPUs without it are
 * unknowns, and `count`, `fraction` and all-GPUs choose among the GPUs that have it.
 */
export function selectTargets(
  spec: GpuFaultSpec,
  nodeName: string,
  gpus: readonly FaultGpu[],
): { targets: FaultTarget[]; unknown: string[] } {
  const f = spec.fault;
  const instance =
    f.type === 'Xid' && f.gpuInstanceId !== undefined && f.computeInstanceId !== undefined
      ? { gi: f.gpuInstanceId, ci: f.computeInstanceId }
      : null;
  const migOf = (g: FaultGpu): FaultGpu['mig'][number] | undefined =>
    instance
      ? g.mig.find((m) => m.gpuInstanceId === instance.gi && m.computeInstanceId === instance.ci)
      : undefined;
  const byIndex = [...gpus].sort((a, b) => a.index - b.index);
  const unknown: string[] = [];
  let named: FaultTarget[] | null = null;

  if (spec.devices !== undefined) {
    named = [];
    for (const name of spec.devices) {
      const gpu = byIndex.find((g) => g.name === name);
      const owner = gpu ? undefined : byIndex.find((g) => g.mig.some((m) => m.name === name));
      const mig = owner?.mig.find((m) => m.name === name);
      if (gpu) named.push({ gpu });
      else if (owner && mig) named.push({ gpu: owner, mig });
      else unknown.push(name);
    }
  } else if (spec.indexes !== undefined) {
    named = [];
    for (const i of spec.indexes) {
      const gpu = byIndex.find((g) => g.index === i);
      if (gpu) named.push({ gpu });
      else unknown.push(`index ${i}`);
    }
  }

  let targets: FaultTarget[];
  if (named) {
    targets = [];
    for (const t of named) {
      if (!instance) targets.push(t);
      else if (t.mig) {
        if (t.mig.gpuInstanceId === instance.gi && t.mig.computeInstanceId === instance.ci) targets.push(t);
        else unknown.push(`${t.mig.name} gi=${instance.gi} ci=${instance.ci}`);
      } else {
        const mig = migOf(t.gpu);
        if (mig) targets.push({ gpu: t.gpu, mig });
        else unknown.push(`${t.gpu.name} gi=${instance.gi} ci=${instance.ci}`);
      }
    }
  } else {
    let chosen = instance ? byIndex.filter((g) => migOf(g) !== undefined) : byIndex;
    if (spec.count !== undefined) {
      const count = spec.count;
      chosen = chosen
        .map((g) => ({ g, h: faultHash(spec.seed, nodeName, g.uuid) }))
        .sort((a, b) => a.h - b.h || a.g.index - b.g.index)
        .slice(0, count)
        .map((x) => x.g)
        .sort((a, b) => a.index - b.index);
    } else if (spec.fraction !== undefined) {
      const p = Number(spec.fraction);
      chosen = chosen.filter((g) => faultHash(spec.seed, nodeName, g.uuid) < p);
    }
    targets = chosen.map((gpu) => {
      const mig = migOf(gpu);
      return mig ? { gpu, mig } : { gpu };
    });
  }
  // Code-unit order, not the locale's: every process must list them alike.
  const key = (t: FaultTarget): string => t.mig?.name ?? '';
  targets.sort((a, b) => a.gpu.index - b.gpu.index || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return { targets, unknown };
}
