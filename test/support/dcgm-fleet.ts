import {
  attribute,
  type Attribution,
  type ClaimView,
  type PodView,
} from '../../src/model/dcgm/attribution.js';
import { entitiesOf } from '../../src/model/dcgm/entities.js';
import type { NodeGpus } from '../../src/model/dcgm/exporter.js';
import { HEALTHY, healthOf } from '../../src/model/dcgm/values.js';
import { modelNode } from '../../src/model/render.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { RENDER_OPTIONS } from './render.js';

/**
 * A fleet of `count` nodes as the fleet's dcgm-exporter sees it, varied enough that every branch of the
 * exposition shows: four machines (one with static MIG), a pod on some GPUs and MIG instances (one label
 * value needing escapes), a lost GPU and XIDs. Deterministic: the same count gives the same nodes.
 */
export function syntheticFleet(count: number): {
  nodes: NodeGpus[];
  attribution: Map<string, Attribution[]>;
} {
  const a100 = resolveProfile('dgx-a100');
  const mig = {
    ...a100,
    spec: {
      ...a100.spec,
      overrides: [{ index: 2, mig: { mode: 'enabled' as const, layout: '3g.20gb x2' } }],
    },
  };
  const machines = [resolveProfile('dgx-h100'), mig, resolveProfile('aws-p4d.24xlarge'), a100].map((p) => {
    const m = modelNode(p, RENDER_OPTIONS).machine;
    return { m, entities: entitiesOf(m) };
  });
  const nodes: NodeGpus[] = [];
  const claims: ClaimView[] = [];
  const pods: PodView[] = [];
  for (let i = 0; i < count; i++) {
    const pick = machines[i % machines.length];
    if (!pick) throw new Error('no machine');
    const { m, entities } = pick;
    const node = `node-${String(i).padStart(5, '0')}`;
    const gpus = entities(node);
    const lost = i % 7 === 3 ? gpus[1]?.uuid : undefined;
    const health = (uuid: string) =>
      uuid === lost
        ? healthOf([{ source: 'f', kind: 'lost' }])
        : i % 5 === 0
          ? healthOf([{ source: 'x', kind: 'xid', xid: 48 }])
          : HEALTHY;
    nodes.push({ node, driverVersion: m.driverVersion, gpus, health });
    if (i % 3 !== 0) continue;
    const devices = i % 4 === 1 ? ['gpu-2-mig-3g20gb-9-4', 'gpu-0'] : ['gpu-0', 'gpu-1'];
    const name = `job-${String(i)}`;
    claims.push({
      namespace: 'ml',
      name: `${name}-gpus`,
      results: devices.map((device) => ({ driver: 'gpu.nvidia.com', pool: node, device })),
    });
    pods.push({
      namespace: 'ml',
      name: i % 6 === 0 ? `${name}"\\` : name,
      annotations: i % 2 === 0 ? { 'fakegpu.dev/gpu-util': 'sine(20,90,60s)' } : {},
      startedAtMs: 0,
      containers: [{ name: 'main', claims: ['gpus'] }],
      claims: { gpus: `${name}-gpus` },
    });
  }
  const attribution = attribute(claims, pods, 'gpu.nvidia.com', () => undefined);
  return { nodes, attribution };
}
