#!/usr/bin/env node
// Writes upstream/<folder>/go.mod and go.sum for one Kubernetes release, from the Go module proxy:
//   node scripts/pin-kubernetes.mjs 1.34.4 kubernetes-1.34 [go1.27.3]
// k8s.io/kubernetes replaces its staging modules (k8s.io/api, k8s.io/client-go, …) with local paths, which a
// module that depends on it cannot follow; each is pinned here to the release published as v0.<minor>.<patch>.
// The third argument is the GOTOOLCHAIN a release newer than the machine's Go needs.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [version, folder, toolchain] = process.argv.slice(2);
if (!/^1\.\d+\.\d+(-[0-9A-Za-z.]+)?$/.test(version ?? '') || !folder) {
  console.error(
    'usage: node scripts/pin-kubernetes.mjs <version, e.g. 1.34.4> <folder under upstream/> [GOTOOLCHAIN]',
  );
  process.exit(2);
}
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env, GOTOOLCHAIN: toolchain ?? 'local', GOFLAGS: '-mod=mod' };
const go = (args, cwd) =>
  execFileSync('go', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

const info = JSON.parse(go(['mod', 'download', '-json', `k8s.io/kubernetes@v${version}`], root));
const upstream = readFileSync(info.GoMod, 'utf8');
const goLine = /^go (\S+)$/m.exec(upstream)?.[1];
const staging = [...upstream.matchAll(/^\s*(k8s\.io\/[a-z0-9-]+) => \.\/staging\//gm)].map((m) => m[1]);
const published = `v0.${version.slice(2)}`;
const release = version.split('.').slice(0, 2).join('.');

const dir = join(root, 'upstream', folder);
mkdirSync(dir, { recursive: true });
writeFileSync(
  join(dir, 'go.mod'),
  [
    `// Pins upstream Kubernetes ${version} for fakegpu's local cluster (cluster up --kubernetes-version ${release}).`,
    '// k8s.io/kubernetes replaces its staging modules with local paths, so each one is pinned here to the',
    `// matching published ${published} release. Written by scripts/pin-kubernetes.mjs.`,
    `module fakegpu.dev/cluster/${folder}`,
    '',
    `go ${goLine}`,
    '',
    'tool (',
    ...['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl', 'kubelet'].map(
      (c) => `\tk8s.io/kubernetes/cmd/${c}`,
    ),
    ')',
    '',
    `require k8s.io/kubernetes v${version}`,
    '',
    'replace (',
    ...staging.map((m) => `\t${m} => ${m} ${published}`),
    ')',
    '',
  ].join('\n'),
);
go(['mod', 'tidy'], dir);
console.log(
  `upstream/${folder}/go.mod pins Kubernetes ${version} (go ${goLine}, ${staging.length} staging modules)`,
);
