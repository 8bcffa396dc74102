import { join } from 'node:path';
import { FakegpuError } from '../errors.js';
import { GPUFAULT_CRD } from '../fault/resource.js';
import type { Layout } from './config.js';
import { kubectl } from './kubectl.js';
import { REPO_ROOT } from './repo.js';

/**
 * fakegpu's own CRDs (deploy/crds/: GpuFault), installed as soon as the API server is ready, with or
 * without a profile: the plugin and the fleet watch them, and `fakegpu fault` writes them. Applied
 * again when a running cluster is reused, so that one started before a CRD changed gets the new one;
 * Established means the API server serves the resource. `bin`: the directory of the cluster's kubectl.
 */
export function installCrds(l: Layout, bin: string): void {
  const applied = kubectl(l, bin, ['apply', '-f', join(REPO_ROOT, 'deploy', 'crds')]);
  if (applied.code !== 0)
    throw new FakegpuError('cluster up', `installing the CRDs failed: ${applied.err.trim()}`);
  const ready = kubectl(l, bin, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    `crd/${GPUFAULT_CRD}`,
  ]);
  if (ready.code !== 0)
    throw new FakegpuError('cluster up', `the CRD ${GPUFAULT_CRD} was not established: ${ready.err.trim()}`);
}
