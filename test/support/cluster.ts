import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { clusterUp, type ClusterOptions, type Exports } from '../../src/local-cluster/cluster.js';
import { cacheRoot } from '../../src/local-cluster/build.js';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The cluster integration tests share: the one `fakegpu cluster up` gives users. `npm test` starts it
 * once before the integration files and stops it after; a file run on its own starts it here.
 */
export const TEST_CLUSTER_DIR = process.env['FAKEGPU_TEST_CLUSTER_DIR'] ?? join(cacheRoot(), 'test-cluster');
export const TEST_NODE = 'fakegpu-test-node';

const clusters = new Map<string, Promise<Exports>>();

/** One cluster per directory per test process, started (or reused) on first use. */
export function sharedCluster(o: Omit<ClusterOptions, 'log'>): Promise<Exports> {
  let c = clusters.get(o.dir);
  if (!c) {
    c = clusterUp({
      ...o,
      log: (l) => {
        process.stderr.write(`fakegpu: ${l}\n`);
      },
    });
    clusters.set(o.dir, c);
  }
  return c;
}

export function testCluster(): Promise<Exports> {
  return sharedCluster({ dir: TEST_CLUSTER_DIR, nodeName: TEST_NODE });
}

export interface Result {
  code: number;
  out: string;
  err: string;
}

export function kubectl(e: Exports, args: string[], input?: string): Result {
  const r = spawnSync('kubectl', args, {
    env: { ...process.env, KUBECONFIG: e.KUBECONFIG, PATH: e.PATH },
    encoding: 'utf8',
    input,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  return { code: r.status ?? 1, out: r.stdout, err: r.stderr };
}

export function mustKubectl(e: Exports, args: string[], input?: string): string {
  const r = kubectl(e, args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.err}`);
  return r.out;
}

/** The node's Ready condition is True. */
export function nodeReady(e: Exports, node: string): boolean {
  return (
    mustKubectl(e, [
      'get',
      'node',
      node,
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
    ]) === 'True'
  );
}

export async function eventually<T>(what: string, fn: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    await sleep(500);
  }
}

/** The names of the cluster's KWOK nodes (label `type=kwok`). */
export function kwokNodeNames(e: Exports): string[] {
  return mustKubectl(e, ['get', 'nodes', '-l', 'type=kwok', '-o', 'jsonpath={.items[*].metadata.name}'])
    .split(' ')
    .filter(Boolean);
}
