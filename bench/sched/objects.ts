/**
 * The bench's objects in the cluster: its namespace with the pods, claims and templates in it, the
 * DeviceClasses it may have to add, and the slices it deletes between phases.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../src/local-cluster/cluster.js';
import { FakegpuError } from '../../src/errors.js';
import { inParallel, names, type Node, Raw, SLICES_PATH, until } from '../support.js';
import { log } from './config.js';

export const NS = 'fakegpu-bench-sched';
export const BENCH_LABEL = 'fakegpu.dev/bench';
const BENCH_SEL = `labelSelector=${encodeURIComponent(`${BENCH_LABEL}=sched`)}`;
export const CLASSES_PATH = '/apis/resource.k8s.io/v1/deviceclasses';
export const PODS_PATH = `/api/v1/namespaces/${NS}/pods`;
const CLAIMS_PATH = `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims`;
const TEMPLATES_PATH = `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaimtemplates`;

export async function del(raw: Raw, path: string): Promise<void> {
  const r = await raw.send('DELETE', path);
  if (r.status >= 300 && r.status !== 404)
    throw new Error(`DELETE ${path}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
}

async function poll(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > timeoutMs) throw new FakegpuError('bench/sched', `timed out: ${what}`);
    await sleep(1000);
  }
}

export const slicesOf = (driver: string, node: string, labelled: boolean): string =>
  `fieldSelector=${encodeURIComponent(`spec.driver=${driver},spec.nodeName=${node}`)}${labelled ? `&${BENCH_SEL}` : ''}`;

/** Deletes `driver`'s slices of these nodes (only the bench's own with `labelled`) and waits until none is left. */
export async function deleteSlices(
  raw: Raw,
  nodes: Node[],
  driver: string,
  labelled: boolean,
  inFlight: number,
): Promise<void> {
  for (let round = 0; round < 5; round++) {
    let left = 0;
    await inParallel(nodes, inFlight, async (n) => {
      const ns = await names(raw, SLICES_PATH, slicesOf(driver, n.name, labelled));
      left += ns.length;
      for (const s of ns) await del(raw, `${SLICES_PATH}/${s}`);
    });
    if (left === 0) return;
    log(`deleted ${left} ${driver} slices`);
  }
  throw new FakegpuError('bench/sched', `could not delete the ${driver} slices`);
}

/** The namespace's pods, claims and templates deleted and gone (claims' finalizers taken off, not awaited). */
export async function cleanupNamespace(raw: Raw, inFlight: number): Promise<void> {
  const pods = await names(raw, PODS_PATH);
  if (pods.length > 0) log(`deleting ${pods.length} pods`);
  await inParallel(pods, inFlight, (p) => del(raw, `${PODS_PATH}/${p}?gracePeriodSeconds=0`));
  await poll('the pods deleted', 600_000, async () => (await names(raw, PODS_PATH)).length === 0);
  // kube-controller-manager frees claims at its client's rate (20 requests/s by default), minutes for
  // thousands: the bench takes the pods' claims away itself; nothing is left to run on them.
  const claims = await names(raw, CLAIMS_PATH);
  if (claims.length > 0) log(`deleting ${claims.length} claims`);
  await inParallel(claims, inFlight, async (c) => {
    await del(raw, `${CLAIMS_PATH}/${c}`);
    const r = await raw.send(
      'PATCH',
      `${CLAIMS_PATH}/${c}`,
      JSON.stringify({ metadata: { finalizers: null } }),
      'application/json',
      'application/merge-patch+json',
    );
    if (r.status >= 300 && r.status !== 404)
      throw new Error(`PATCH claim ${c}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  });
  await poll('the claims deleted', 600_000, async () => (await names(raw, CLAIMS_PATH)).length === 0);
  for (const t of await names(raw, TEMPLATES_PATH)) await del(raw, `${TEMPLATES_PATH}/${t}`);
}

export async function ensureNamespace(raw: Raw): Promise<void> {
  // An earlier run's namespace may still be going away.
  await poll(`namespace ${NS} gone or active`, 600_000, async () => {
    const g = await raw.send('GET', `/api/v1/namespaces/${NS}`);
    return (
      g.status === 404 || (JSON.parse(g.text) as { status?: { phase?: string } }).status?.phase === 'Active'
    );
  });
  const r = await raw.send(
    'POST',
    '/api/v1/namespaces',
    JSON.stringify({ metadata: { name: NS, labels: { [BENCH_LABEL]: 'sched' } } }),
  );
  if (r.status >= 300 && r.status !== 409)
    throw new Error(`creating namespace ${NS}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  await until('the namespace’s service account', 60_000, async () => {
    return (await raw.send('GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200;
  });
}

export async function createTemplate(raw: Raw, name: string, spec: unknown): Promise<void> {
  await raw.ok(
    'POST',
    TEMPLATES_PATH,
    JSON.stringify({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name, labels: { [BENCH_LABEL]: 'sched' } },
      spec: { spec },
    }),
  );
}

/**
 * The DeviceClasses the variant's claims name, created from deploy/deviceclasses.yaml where the cluster
 * lacks them (`cluster up` installs them; an existing cluster may not have them). Answers those created.
 */
export async function ensureClasses(raw: Raw, wanted: string[]): Promise<string[]> {
  const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy', 'deviceclasses.yaml'), 'utf8')).map(
    (d) => d.toJS() as { metadata?: { name?: string } } | null,
  );
  const created: string[] = [];
  for (const name of wanted) {
    if ((await raw.send('GET', `${CLASSES_PATH}/${name}`)).status === 200) continue;
    const doc = docs.find((d) => d?.metadata?.name === name);
    if (!doc)
      throw new FakegpuError('bench/sched', `DeviceClass ${name} is not in deploy/deviceclasses.yaml`);
    log(`creating DeviceClass ${name} (deploy/deviceclasses.yaml)`);
    await raw.ok('POST', CLASSES_PATH, JSON.stringify(doc));
    created.push(name);
  }
  return created;
}
