import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { Layout } from './config.js';

/** The cluster's kubectl as its admin. */
export function kubectl(
  l: Layout,
  bin: string,
  args: string[],
  input?: string,
): { code: number; out: string; err: string } {
  const r = spawnSync(join(bin, 'kubectl'), [`--kubeconfig=${l.adminKubeconfig}`, ...args], {
    encoding: 'utf8',
    input,
    maxBuffer: 256 * 1024 * 1024,
  });
  return { code: r.status ?? 1, out: r.stdout, err: r.stderr };
}
