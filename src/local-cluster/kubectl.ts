import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { FakegpuError } from '../errors.js';
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

/** Applies these objects as one List; a failure is one line: `<what> failed: <kubectl's reason>`. */
export function applyObjects(
  l: Layout,
  bin: string,
  objects: unknown[],
  what: string,
  field = 'cluster up',
): void {
  const r = kubectl(
    l,
    bin,
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
  );
  if (r.code !== 0) throw new FakegpuError(field, `${what} failed: ${r.err.trim()}`);
}
