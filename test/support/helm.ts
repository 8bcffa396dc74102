import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/** The Helm chart, linted and rendered by helm (built from source like the rest) and checked by the real API server. */
export const CHART = join(REPO_ROOT, 'deploy', 'helm', 'fakegpu');

export function helm(e: Exports, args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync('helm', args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      PATH: e.PATH,
      HELM_CACHE_HOME: '/tmp/fakegpu-helm-cache',
      HELM_CONFIG_HOME: '/tmp/fakegpu-helm-config',
    },
  });
  if (r.error) throw r.error;
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** `helm template` of the chart for the cluster's Kubernetes version, with more arguments. */
export function template(
  e: Exports,
  extra: string[] = [],
  release = 'fakegpu',
): { code: number | null; out: string; err: string } {
  return helm(e, ['template', release, CHART, '--kube-version', 'v1.37.2', ...extra]);
}
