import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/process/repo.js';

const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The binary, run without blocking this process (a fake API server in it may answer), KUBECONFIG unset. */
export function fakegpuAsync(...args: string[]): Promise<Run> {
  const env = { ...process.env };
  delete env['KUBECONFIG'];
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
    });
  });
}

/** A kubeconfig in `dir` for a plain-HTTP server, as checkKubeconfig accepts one. */
export function kubeconfigFor(dir: string, server: string, file: string): string {
  const path = join(dir, file);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
  );
  return path;
}
