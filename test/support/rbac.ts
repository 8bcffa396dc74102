import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { eventually, kubectl, mustKubectl, type Result } from './cluster.js';
import { template } from './helm.js';

/**
 * The chart's accounts against the real API server: its RBAC and admission policies applied without
 * the workloads, tokens as its pods get them, writes as its code sends them. Shared by the RBAC
 * integration test and the version matrix (claim status on every release).
 */

/** The kinds that say what an account may do: applied without the workloads, whose images are not here. */
export const RBAC_KINDS = new Set([
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);

interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
}

/** The chart rendered with `args`, its accounts, roles, bindings and admission policies only, as a List. */
export function rbacOf(
  e: Exports,
  release: string,
  ns: string,
  args: string[],
): { list: string; accounts: string[] } {
  const r = template(e, ['--namespace', ns, ...args], release);
  assert.equal(r.code, 0, r.err);
  const items = parseAllDocuments(r.out)
    .map((d) => d.toJS() as Doc)
    .filter((d) => RBAC_KINDS.has(d.kind));
  const accounts = items
    .filter((d) => d.kind === 'ServiceAccount')
    .map((d) => d.metadata.name)
    .sort();
  return { list: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }), accounts };
}

/** A namespace of its own; one a previous run deleted may still be terminating. */
export async function freshNamespace(e: Exports, ns: string): Promise<void> {
  await eventually(`namespace ${ns} of a previous run to be gone`, () =>
    kubectl(e, ['get', 'namespace', ns]).code !== 0 ? true : undefined,
  );
  mustKubectl(e, ['create', 'namespace', ns]);
}

/** The admin kubeconfig with a token instead of its client certificate, which the API server would prefer. */
export function tokenConfig(e: Exports, dir: string, file: string, token: string): string {
  const config = JSON.parse(
    mustKubectl(e, ['config', 'view', '--raw', '--minify', '--flatten', '-o', 'json']),
  ) as { users: { name: string; user: Record<string, unknown> }[] };
  for (const u of config.users) u.user = { token };
  const path = join(dir, file);
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}

/** A write through fakegpu's own client, as a kubectl-like result. */
export async function attempt(write: Promise<unknown>): Promise<Result> {
  try {
    await write;
    return { code: 0, out: '', err: '' };
  } catch (err) {
    return { code: 1, out: '', err: err instanceof Error ? err.message : String(err) };
  }
}

/** A pod that never runs (its node has no kubelet), with the labels given. */
export function idlePod(
  name: string,
  ns: string,
  nodeName: string,
  serviceAccountName: string,
  labels: Record<string, string> = {},
): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels },
    spec: {
      nodeName,
      serviceAccountName,
      automountServiceAccountToken: false,
      containers: [{ name: 'c', image: 'fakegpu.invalid/none:1', imagePullPolicy: 'Never' }],
    },
  });
}

/** The token a pod of `account` gets: bound to the pod, so the API server adds the pod's node to its user's extra. */
export function podToken(e: Exports, ns: string, account: string, podName: string): string {
  const uid = mustKubectl(e, ['get', 'pod', podName, '-n', ns, '-o', 'jsonpath={.metadata.uid}']);
  return mustKubectl(e, [
    'create',
    'token',
    account,
    '-n',
    ns,
    '--duration',
    '10m',
    '--bound-object-kind',
    'Pod',
    '--bound-object-name',
    podName,
    '--bound-object-uid',
    uid,
  ]).trim();
}
