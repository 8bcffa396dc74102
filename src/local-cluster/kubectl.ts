import { spawn, spawnSync } from 'node:child_process';
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

/** `kubectl()` without blocking the event loop, so that several run at once. */
export function kubectlAsync(
  l: Layout,
  bin: string,
  args: string[],
  input?: string,
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(join(bin, 'kubectl'), [`--kubeconfig=${l.adminKubeconfig}`, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    // Only the tail of what went wrong is kept: the error line is at its end.
    p.stderr.setEncoding('utf8').on('data', (c: string) => (err = (err + c).slice(-16_384)));
    p.on('error', (e) => {
      resolve({ code: 1, out, err: e.message });
    });
    p.on('close', (code) => {
      resolve({ code: code ?? 1, out, err });
    });
    p.stdin.end(input ?? '');
  });
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
