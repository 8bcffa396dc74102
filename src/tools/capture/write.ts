import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { POOLS_KIND } from '../../fleet/pools.js';
import { API_VERSION, KIND } from '../../model/profile/schema.js';
import type { ClusterCapture } from './cluster.js';

/**
 * A cluster capture on disk: `pools.yaml` (a FleetPools file with every pool's machine inline and its
 * nodes, what `cluster up --kwok-pools` and the chart's `fleet.pools` take), `profiles/<pool>.yaml`
 * (the same machines as MachineProfiles, for `render`, `diff` and `validate`) and `slices/` (what is
 * kept verbatim).
 */
export function writeCapture(dir: string, c: ClusterCapture, source: string): { pools: string } {
  mkdirSync(join(dir, 'profiles'), { recursive: true });
  const yaml = (v: unknown): string => stringify(v, { lineWidth: 0 });
  const pools: Record<string, unknown> = {};
  for (const p of c.pools) {
    const spec = { description: `captured from ${source}: ${p.nodes.length} node(s)`, ...p.spec };
    pools[p.name] = {
      spec,
      dynamicMig: p.dynamicMig,
      nodes: {
        names: p.nodes,
        ...(Object.keys(p.labels).length > 0 ? { labels: p.labels } : {}),
        ...(p.taints.length > 0 ? { taints: p.taints } : {}),
      },
    };
    writeFileSync(
      join(dir, 'profiles', `${p.name}.yaml`),
      yaml({
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: p.name },
        spec,
        provenance: Object.fromEntries(
          ['gpus', 'busIds', 'pcieRoots', 'numa', 'driver', 'mig', ...(p.spec.nics ? ['nics'] : [])].map(
            (k) => [k, { status: 'confirmed', from: `${source} (ResourceSlices)` }],
          ),
        ),
      }),
    );
  }
  const poolsPath = join(dir, 'pools.yaml');
  writeFileSync(poolsPath, yaml({ apiVersion: API_VERSION, kind: POOLS_KIND, pools }));
  if (c.verbatim.length > 0 || c.otherDrivers.size > 0) mkdirSync(join(dir, 'slices'), { recursive: true });
  const list = (items: unknown[]): string => yaml({ apiVersion: 'v1', kind: 'List', items });
  for (const v of c.verbatim) writeFileSync(join(dir, 'slices', `${v.node}.yaml`), list(v.slices));
  for (const [driver, slices] of c.otherDrivers)
    writeFileSync(join(dir, 'slices', `${driver}.yaml`), list(slices));
  return { pools: poolsPath };
}
