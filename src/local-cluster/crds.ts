import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { FakegpuError } from '../errors.js';
import type { Layout } from './config.js';
import { kubectl } from './kubectl.js';
import { REPO_ROOT } from '../process/repo.js';

export const CRDS_DIR = join(REPO_ROOT, 'deploy', 'crds');

/**
 * The names of the CRDs in `dir`, read from the files that `kubectl apply -f dir` applies, so that a CRD
 * added there is waited for without a second list to keep in step.
 */
export function crdNames(dir: string = CRDS_DIR): string[] {
  const names: string[] = [];
  const files = readdirSync(dir)
    .filter((f) => /\.(ya?ml|json)$/.test(f))
    .sort();
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      if (doc.errors.length) throw new FakegpuError('cluster up', `${file}: ${doc.errors[0]?.message ?? ''}`);
      const o: unknown = doc.toJS();
      if (typeof o !== 'object' || o === null || !('kind' in o) || o.kind !== 'CustomResourceDefinition')
        continue;
      const name =
        'metadata' in o && typeof o.metadata === 'object' && o.metadata !== null && 'name' in o.metadata
          ? o.metadata.name
          : undefined;
      if (typeof name !== 'string' || name === '')
        throw new FakegpuError('cluster up', `${file}: a CustomResourceDefinition without metadata.name`);
      names.push(name);
    }
  }
  return names;
}

/**
 * fakegpu's CRDs (deploy/crds/: GpuFault, and NVIDIA's ComputeDomain and ComputeDomainClique), installed
 * as soon as the API server is ready, with or without a profile: the plugin and the fleet watch them,
 * and `fakegpu fault` writes them. Applied again when a running cluster is reused, so that one started
 * before a CRD changed gets the new one; Established means the API server serves the resource. `bin`:
 * the directory of the cluster's kubectl.
 */
export function installCrds(l: Layout, bin: string): void {
  const names = crdNames();
  const applied = kubectl(l, bin, ['apply', '-f', CRDS_DIR]);
  if (applied.code !== 0)
    throw new FakegpuError('cluster up', `installing the CRDs failed: ${applied.err.trim()}`);
  waitEstablished(l, bin, names, `the CRDs ${names.join(', ')}`);
}

/** Until the API server serves every one of these CRDs; `what` names them in the refusal. */
function waitEstablished(l: Layout, bin: string, names: readonly string[], what: string): void {
  const ready = kubectl(l, bin, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...names.map((n) => `crd/${n}`),
  ]);
  if (ready.code !== 0)
    throw new FakegpuError('cluster up', `${what} were not all established: ${ready.err.trim()}`);
}

/**
 * An upstream project's CRDs from folders of its module, applied server-side (their schemas are past
 * what a client-side apply can annotate) and waited for until Established.
 */
export function installUpstreamCrds(l: Layout, bin: string, folders: readonly string[], what: string): void {
  const applied = kubectl(l, bin, [
    'apply',
    '--server-side',
    '--force-conflicts',
    ...folders.flatMap((f) => ['-f', f]),
  ]);
  if (applied.code !== 0)
    throw new FakegpuError('cluster up', `installing ${what}'s CRDs failed: ${applied.err.trim()}`);
  const names = applied.out
    .split('\n')
    .map((x) => /^customresourcedefinition\.apiextensions\.k8s\.io\/(\S+)/.exec(x)?.[1])
    .filter((x): x is string => x !== undefined);
  waitEstablished(l, bin, names, `${what}'s CRDs`);
}
