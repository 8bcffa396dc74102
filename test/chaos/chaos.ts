import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { clusterRestart, type Exports, type Restartable } from '../../src/local-cluster/cluster.js';
import { layout } from '../../src/local-cluster/config.js';
import { isAlive, readPid } from '../../src/local-cluster/process.js';
import { listSpecs } from '../../src/node/cdi/write.js';
import { parseChecked } from '../../src/node/durable/file.js';
import { CRASH_ENV, CRASH_POINTS, type CrashPoint } from '../../src/node/prepare/crash.js';
import { eventually, kubectl, mustKubectl, sharedCluster } from '../support/cluster.js';
import { seeded } from '../support/random.js';
import { allocatedUuids, apply, podClaim, podManifest, seesNow, seen, type Seen } from '../support/e2e.js';

/**
 * One phase of the chaos suite against a running local cluster whose node runs the plugin. Each cycle
 * churns pods with GPU, MIG and NIC claims and hits the node with one disruption: a kill -9 of the
 * plugin at a random moment, a kill inside a prepare or unprepare (a crash point), a graceful plugin
 * restart, a kubelet restart or an API server restart. After each, every running pod must still see
 * exactly its devices, asked through `kubectl exec`. At the end every pod goes, and nothing may be
 * left: CDI specs, views, checkpoint entries or MIG instances. `scripts/chaos.mjs` runs the phases
 * and prints the suite's last line.
 */

const { values: a } = parseArgs({
  options: {
    dir: { type: 'string' },
    node: { type: 'string' },
    profile: { type: 'string' },
    'dynamic-mig': { type: 'boolean', default: false },
    cycles: { type: 'string', default: '10' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    result: { type: 'string' },
  },
});
if (!a.dir || !a.node || !a.profile || !a.result) {
  process.stderr.write('chaos: --dir, --node, --profile and --result are needed\n');
  process.exit(2);
}
const dir = a.dir;
const node = a.node;
const cycles = Number(a.cycles);
const seed = Number(a.seed);
const resultFile = a.result;

const { random, pick } = seeded(seed);

const log = (line: string): void => {
  process.stderr.write(`chaos: ${line}\n`);
};

type Kind = 'gpu' | 'mig' | 'nic';
/** At most this many pods of each kind at once, so the node always has room for all of them. */
const LIMIT: Record<Kind, number> = { gpu: 2, mig: 3, nic: 2 };

interface Live {
  name: string;
  kind: Kind;
  /** What it printed when it first ran. */
  saw: Seen | null;
}

const e: Exports = await sharedCluster({
  dir,
  nodeName: node,
  profile: a.profile,
  dynamicMig: a['dynamic-mig'],
});

// A cluster directory used before may still hold an earlier run's pods: start from none.
mustKubectl(e, [
  'delete',
  'pods,resourceclaims,resourceclaimtemplates',
  '--all',
  '--wait=true',
  '--timeout=180s',
]);

const migRequest = a['dynamic-mig']
  ? {
      deviceClassName: 'mig.nvidia.com',
      selectors: [{ cel: { expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'" } }],
    }
  : { deviceClassName: 'mig.nvidia.com' };
const templates: Record<Kind, unknown> = {
  gpu: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.nvidia.com' } }] },
  mig: { requests: [{ name: 'gpu', exactly: migRequest }] },
  nic: {
    requests: [
      { name: 'gpu', exactly: { deviceClassName: 'gpu.nvidia.com' } },
      { name: 'nic', exactly: { deviceClassName: e.FAKEGPU_NIC_CLASS } },
    ],
  },
};
apply(
  e,
  ...Object.entries(templates).map(([kind, devices]) => ({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name: `chaos-${kind}`, namespace: 'default' },
    spec: { spec: { devices } },
  })),
);

const live = new Map<string, Live>();
/** Pods on their way out still hold their devices until they are gone. */
const deleting = new Map<string, Kind>();
let made = 0;
let lost = 0;
let staleViews = 0;
const problems: string[] = [];
/** Pods already counted, as `<pod>/view` or `<pod>/claim`. */
const flagged = new Set<string>();

function createPod(kind: Kind): void {
  const name = `chaos-${kind}-${made++}`;
  apply(
    e,
    podManifest(e, {
      name,
      claims: [{ name: 'c', template: `chaos-${kind}` }],
      containers: [
        {
          name: 'main',
          claims: [{ name: 'c', request: 'gpu' }, ...(kind === 'nic' ? [{ name: 'c', request: 'nic' }] : [])],
        },
      ],
    }),
  );
  live.set(name, { name, kind, saw: null });
}

function deletePod(name: string): void {
  kubectl(e, ['delete', 'pod', name, '--wait=false']);
  const p = live.get(name);
  live.delete(name);
  if (p) deleting.set(name, p.kind);
}

/** Kinds with room for one more pod, counting pods on their way out. */
function room(): Kind[] {
  const held = [...[...live.values()].map((p) => p.kind), ...deleting.values()];
  return (['gpu', 'mig', 'nic'] as const).filter((k) => held.filter((h) => h === k).length < LIMIT[k]);
}

function churn(): string {
  let gone = 0;
  let added = 0;
  for (let n = Math.floor(random() * 3); n > 0 && live.size > 0; n--) {
    deletePod(pick([...live.keys()]));
    gone++;
  }
  for (let n = 1 + Math.floor(random() * 2); n > 0; n--) {
    const kinds = room();
    if (kinds.length === 0) break;
    createPod(pick(kinds));
    added++;
  }
  return `+${added} -${gone}`;
}

const l = layout(dir);
const pluginPid = (): number | null => readPid(l.run, 'fakegpu-plugin');

async function killPlugin(): Promise<void> {
  const pid = pluginPid();
  if (pid !== null && isAlive(pid)) process.kill(pid, 'SIGKILL');
  await eventually('the plugin gone', () => (pid === null || !isAlive(pid) ? true : undefined), 10_000);
}

/** As a DaemonSet would: the plugin comes back, after a moment, without any help but a restart. */
async function restart(name: Restartable): Promise<void> {
  await clusterRestart(dir, name, () => undefined);
}

/**
 * Crash points a prepare or unprepare on this node passes: only claims that make MIG instances record
 * their intent first and make instances, so without dynamic MIG those points are never reached.
 */
const REACHABLE = CRASH_POINTS.filter(
  (p) => a['dynamic-mig'] || !(p === 'prepare-started' || p.startsWith('mig-')),
);
let crashCycles = 0;
let crashes = 0;

/**
 * The churn that passes `point`: a pod that goes, for an unprepare; a pod that comes, for a prepare (a
 * MIG pod where the point is on the way to a MIG instance). Where its kind has no room, one of that kind
 * goes first; the new pod waits for its device, then prepares.
 */
function churnFor(point: CrashPoint): string {
  if (point.startsWith('unprepare')) {
    const victim = [...live.keys()][0];
    if (victim === undefined) return churn();
    deletePod(victim);
    return '+0 -1';
  }
  const want: Kind = point === 'prepare-started' || point.startsWith('mig-') ? 'mig' : 'gpu';
  let gone = 0;
  if (!room().includes(want)) {
    const victim = [...live.values()].find((p) => p.kind === want);
    if (victim) {
      deletePod(victim.name);
      gone++;
    }
  }
  createPod(want);
  return `+1 -${gone}`;
}

const DISRUPTIONS = [
  'kill-plugin',
  'crash-point',
  'restart-plugin',
  'restart-kubelet',
  'restart-apiserver',
] as const;

async function disrupt(kind: (typeof DISRUPTIONS)[number]): Promise<string> {
  switch (kind) {
    case 'kill-plugin': {
      const what = churn();
      await sleep(random() * 1500);
      await killPlugin();
      await sleep(random() * 2000);
      await restart('fakegpu-plugin');
      return what;
    }
    case 'crash-point': {
      // In turn through the points this node can reach, each with the churn that reaches it.
      const point = REACHABLE[crashCycles++ % REACHABLE.length] ?? 'files-written';
      process.env[CRASH_ENV] = point;
      try {
        await restart('fakegpu-plugin');
      } finally {
        // An empty value names no point; the plugin started next runs without one.
        process.env[CRASH_ENV] = '';
      }
      const what = churnFor(point);
      // Started again without the point once it crashed, as a supervisor would; a point the churn could
      // not reach (no room for the pod it needed) is counted as missed.
      const pid = pluginPid();
      await eventually(
        'the crash point',
        () => (pid === null || !isAlive(pid) ? true : undefined),
        8_000,
      ).catch(() => undefined);
      const crashed = pid === null || !isAlive(pid);
      if (crashed) crashes++;
      await restart('fakegpu-plugin');
      return `${what} ${point}${crashed ? ' (crashed)' : ''}`;
    }
    case 'restart-plugin': {
      const what = churn();
      await sleep(random() * 1000);
      await restart('fakegpu-plugin');
      return what;
    }
    case 'restart-kubelet': {
      const what = churn();
      await sleep(random() * 1000);
      await restart('kubelet');
      return what;
    }
    case 'restart-apiserver': {
      const what = churn();
      await sleep(random() * 1000);
      await restart('kube-apiserver');
      return what;
    }
  }
}

function phase(pod: string): string {
  return kubectl(e, ['get', 'pod', pod, '-o', 'jsonpath={.status.phase}']).out;
}

/** Every pod Running and every deleted one gone; a pod that does not get there is lost. */
async function settle(): Promise<void> {
  const deadline = Date.now() + 180_000;
  for (const p of [...live.values()]) {
    const ok = await eventually(
      `pod ${p.name} Running`,
      () => {
        const ph = phase(p.name);
        return ph === 'Running' ? true : ph === 'Failed' || ph === 'Succeeded' ? false : undefined;
      },
      Math.max(1000, deadline - Date.now()),
    ).catch(() => false);
    if (!ok) {
      lost++;
      problems.push(
        `${p.name} (${p.kind}) not Running: ${kubectl(e, ['describe', 'pod', p.name]).out.split('\n').slice(-8).join(' | ')}`,
      );
      deletePod(p.name);
      continue;
    }
    p.saw ??= await seen(e, p.name, 'main');
  }
  for (const d of [...deleting.keys()]) {
    await eventually(
      `pod ${d} gone`,
      () => (kubectl(e, ['get', 'pod', d]).code !== 0 ? true : undefined),
      120_000,
    );
    deleting.delete(d);
  }
}

/** Each running pod, asked now, sees what it saw at start: exactly its one GPU or MIG device. */
/** `kubectl exec` needs the API server; right after its restart a try can fail without meaning anything. */
async function asked(pod: string): Promise<{ listed: string[]; devNodes: string[] }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return seesNow(e, pod, 'main');
    } catch (err) {
      if (attempt === 5) throw err;
      await sleep(2000);
    }
  }
}

/** The claims the plugin has on record as prepared, per driver, from its checkpoint files. */
function recorded(file: string): Set<string> {
  const claims = records(file) ?? {};
  return new Set(Object.entries(claims).flatMap(([uid, r]) => (r.state === 'PrepareCompleted' ? [uid] : [])));
}

/** A checkpoint file's records by claim UID; none for no file, null for a file that does not read. */
function records(file: string): Record<string, { state: string }> | null {
  if (!existsSync(file)) return {};
  const c = parseChecked(readFileSync(file, 'utf8'));
  return c.ok ? ((c.data['preparedClaims'] ?? {}) as Record<string, { state: string }>) : null;
}

/**
 * Each running pod, asked now, sees what it saw at start, which is exactly what it was allocated: its
 * GPU, or its MIG device under its parent. And the plugin still has its claim: on record as prepared
 * by every driver it uses, with a CDI spec each, so that a later unprepare finds and cleans it.
 */
async function check(): Promise<void> {
  const gpuRecords = recorded(join(dir, 'plugin', 'checkpoint.json'));
  const nicRecords = recorded(join(dir, 'plugin', 'dra.net', 'checkpoint.json'));
  const gpuSpecs = listSpecs(l.cdiDir, 'k8s.gpu.nvidia.com/claim').uids;
  const nicSpecs = listSpecs(l.cdiDir, 'k8s.dra.net/claim').uids;
  for (const p of live.values()) {
    if (!p.saw) continue;
    const now = await asked(p.name);
    const claim = podClaim(e, p.name, 'c');
    const uid = mustKubectl(e, ['get', 'resourceclaim', claim, '-o', 'jsonpath={.metadata.uid}']);
    const uuids = allocatedUuids(e, claim);
    const gpu = uuids.find((u) => u.startsWith('GPU-'));
    // Static MIG devices publish their UUID; a dynamic partition gets one only when it is made.
    const mig = uuids.find((u) => u.startsWith('MIG-'));
    const [first = '', second = ''] = p.saw.listed;
    const exact =
      p.kind === 'mig'
        ? p.saw.listed.length === 2 &&
          first.startsWith('GPU-') &&
          second.startsWith('MIG-') &&
          (mig === undefined || second === mig)
        : p.saw.listed.length === 1 && first === gpu;
    const same = JSON.stringify(now) === JSON.stringify({ listed: p.saw.listed, devNodes: p.saw.devNodes });
    // Each pod counts once, however many cycles it stays wrong.
    if ((!exact || !same) && !flagged.has(`${p.name}/view`)) {
      flagged.add(`${p.name}/view`);
      staleViews++;
      problems.push(
        `${p.name}: saw ${JSON.stringify(p.saw)} at start, now ${JSON.stringify(now)}, allocated ${uuids.join(',')}`,
      );
    }
    const kept =
      gpuRecords.has(uid) &&
      gpuSpecs.has(uid) &&
      (p.kind !== 'nic' || (nicRecords.has(uid) && nicSpecs.has(uid)));
    if (!kept && !flagged.has(`${p.name}/claim`)) {
      flagged.add(`${p.name}/claim`);
      lost++;
      problems.push(
        `${p.name}: claim ${uid} no longer prepared on the node (GPU record ${gpuRecords.has(uid)}, spec ${gpuSpecs.has(uid)}; NIC record ${nicRecords.has(uid)}, spec ${nicSpecs.has(uid)})`,
      );
    }
  }
}

/** What is on the node for claims: CDI specs, view folders, checkpoint entries, MIG GPU instances. */
function onNode(): { cdi: number; views: number; checkpoint: number; mig: number } {
  const state = join(dir, 'plugin');
  const cdi =
    listSpecs(l.cdiDir, 'k8s.gpu.nvidia.com/claim').uids.size +
    listSpecs(l.cdiDir, 'k8s.dra.net/claim').uids.size;
  const views = existsSync(join(state, 'claims')) ? readdirSync(join(state, 'claims')).length : 0;
  // A checkpoint that does not read counts as one thing left behind.
  const entries = (path: string): number => {
    const r = records(path);
    return r === null ? 1 : Object.keys(r).length;
  };
  const checkpoint =
    entries(join(state, 'checkpoint.json')) + entries(join(state, 'dra.net', 'checkpoint.json'));
  let mig = 0;
  for (const f of readdirSync(state).filter((n) => n.startsWith('nvml-state-'))) {
    const c = parseChecked(readFileSync(join(state, f), 'utf8'));
    const gpus = (c.ok ? c.data['gpus'] : {}) as Record<string, { gpuInstances: unknown[] }>;
    for (const g of Object.values(gpus)) mig += g.gpuInstances.length;
  }
  return { cdi, views, checkpoint, mig };
}

/** GPU instances the machine boots with (static MIG): not claims', so not leaks. */
const bootInstances = onNode().mig;
const counts: Record<string, number> = {};
let done = 0;
let leaked = 0;
/** Written after every cycle, so a phase that dies midway still tells how far it got. */
const report = (aborted: string | null): void => {
  writeFileSync(
    resultFile,
    JSON.stringify({ cycles: done, lost, leaked, staleViews, seed, crashCycles, crashes, aborted }),
  );
};

log(`${a.profile}${a['dynamic-mig'] ? ' with dynamic MIG' : ''}: ${cycles} cycles, seed ${seed}`);
try {
  for (let i = 1; i <= cycles; i++) {
    const kind = pick(DISRUPTIONS);
    counts[kind] = (counts[kind] ?? 0) + 1;
    const t0 = Date.now();
    const what = await disrupt(kind);
    await settle();
    const before = staleViews;
    await check();
    done = i;
    report(null);
    log(
      `cycle ${i}/${cycles} ${kind} ${what}: ${live.size} pods running${staleViews > before ? `, ${staleViews - before} stale` : ''} (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
    );
  }

  // The end: every pod goes, gracefully, and the kubelet unprepares every claim.
  for (const name of [...live.keys()]) deletePod(name);
  await settle();
  mustKubectl(e, ['delete', 'resourceclaimtemplates', '--all']);
  const left = await eventually(
    'nothing left on the node',
    () => {
      const n = onNode();
      n.mig -= bootInstances;
      return n.cdi === 0 && n.views === 0 && n.checkpoint === 0 && n.mig === 0 ? n : undefined;
    },
    60_000,
  ).catch(() => {
    const n = onNode();
    return { ...n, mig: n.mig - bootInstances };
  });
  // Each kind on its own: fewer MIG instances than the machine booted with is damage too, not a credit.
  leaked = left.cdi + left.views + left.checkpoint + Math.abs(left.mig);
  if (leaked > 0) problems.push(`left on the node: ${JSON.stringify(left)}`);
  report(null);
} catch (err) {
  const why = err instanceof Error ? err.message : String(err);
  problems.push(`aborted after ${done} cycles: ${why}`);
  report(why);
}
for (const p of problems) log(`problem: ${p}`);
log(`disruptions: ${JSON.stringify(counts)}; crash points fired ${crashes} of ${crashCycles}`);
process.exit(0);
