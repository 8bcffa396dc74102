import { join } from 'node:path';
import { stringify } from 'yaml';
import { POOLS_KIND } from '../../fleet/pools.js';
import { API_VERSION, KIND } from '../../model/profile/schema.js';
import { makeDirectory, pathUnder, writeOutput } from '../../process/files.js';
import type { ClusterCapture } from './cluster.js';

/**
 * A cluster capture on disk: `pools.yaml` (a FleetPools file with every pool's machine inline and its
 * nodes, what `cluster up --kwok-pools` and the chart's `fleet.pools` take), `profiles/<pool>.yaml`
 * (the same machines as MachineProfiles, for `render`, `diff` and `validate`) and `slices/` (what is
 * kept verbatim). Files named after a pool, node or driver are checked to stay in `dir`: those names come
 * from the cluster. `text` is what `pools.yaml` holds.
 */
/** The flag that named the folder: errors on writing are about it. */
const OUTPUT = '--output-dir';

export function writeCapture(
  dir: string,
  c: ClusterCapture,
  source: string,
): { pools: string; text: string } {
  const profiles = join(dir, 'profiles');
  const slices = join(dir, 'slices');
  makeDirectory(profiles, OUTPUT);
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
    writeOutput(
      pathUnder(profiles, `${p.name}.yaml`, OUTPUT),
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
      OUTPUT,
    );
  }
  const poolsPath = join(dir, 'pools.yaml');
  const text = yaml({ apiVersion: API_VERSION, kind: POOLS_KIND, pools });
  writeOutput(poolsPath, text, OUTPUT);
  if (c.verbatim.length > 0 || c.otherDrivers.size > 0) makeDirectory(slices, OUTPUT);
  const list = (items: unknown[]): string => yaml({ apiVersion: 'v1', kind: 'List', items });
  for (const v of c.verbatim)
    writeOutput(pathUnder(slices, `${v.node}.yaml`, OUTPUT), list(v.slices), OUTPUT);
  for (const [driver, kept] of c.otherDrivers)
    writeOutput(pathUnder(slices, `${driver}.yaml`, OUTPUT), list(kept), OUTPUT);
  return { pools: poolsPath, text };
}
