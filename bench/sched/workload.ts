/**
 * One phase's workload, as ClusterLoader2's DRA test runs it: fill the devices with long-running pods,
 * then churn short-lived ones, each created at a rate and timed until the watch sees it Running.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { FakegpuError } from '../../src/errors.js';
import { asError, Raw, seconds } from '../support.js';
import { type Config, log } from './config.js';
import { PODS_PATH } from './objects.js';
import { type Kind, podBody } from './pod.js';
import { f } from './report.js';
import { part, type Part } from './stats.js';
import { PodWatch } from './watch.js';

const POLL_MS = 250;
const PROGRESS_MS = 5000;
/** A phase fails once every pod is created and none has started running for this long. */
const STALL_MS = 180_000;
/** Between publishing a phase's slices and its first pod. */
const SETTLE_MS = 5000;

/** `make(i)` for i < n, started at `qps` per second (0: at once), at most `inFlight` unanswered. */
async function paced(
  n: number,
  qps: number,
  inFlight: number,
  make: (i: number) => Promise<void>,
): Promise<void> {
  const t0 = performance.now();
  const inflight = new Set<Promise<void>>();
  const state: { failure: { e: unknown } | null } = { failure: null };
  for (let i = 0; i < n && !state.failure; i++) {
    if (qps > 0) {
      const wait = t0 + (i * 1000) / qps - performance.now();
      if (wait > 0) await sleep(wait);
    }
    while (inflight.size >= inFlight) await Promise.race(inflight);
    const p: Promise<void> = make(i)
      .catch((e: unknown) => {
        state.failure ??= { e };
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  if (state.failure) throw state.failure.e;
}

interface Creating {
  done: boolean;
  failed: Error | null;
  createdS: number;
}

/** The creation `run`, followed without being awaited, so the wait for Running can watch it. */
function creating(t0: number, run: Promise<void>): Creating {
  const c: Creating = { done: false, failed: null, createdS: 0 };
  run.then(
    () => {
      c.done = true;
      c.createdS = seconds(t0);
    },
    (e: unknown) => {
      c.failed = asError(e);
    },
  );
  return c;
}

/** Why the first pod of `kind` that is not Running is not: its PodScheduled condition, as the API has it. */
async function stuck(raw: Raw, w: PodWatch, kind: Kind): Promise<string> {
  const name = [...w.recs].find(([, r]) => r.kind === kind && r.running === undefined)?.[0];
  if (!name) return '';
  const r = await raw.send('GET', `${PODS_PATH}/${name}`).catch(() => ({ status: 0, text: '' }));
  let p: { status?: { phase?: string; conditions?: { type?: string; reason?: string; message?: string }[] } };
  try {
    p = JSON.parse(r.text) as typeof p;
  } catch {
    p = {};
  }
  const c = p.status?.conditions?.find((x) => x.type === 'PodScheduled');
  return `; ${name} is ${p.status?.phase ?? `HTTP ${r.status}`}${c ? `, PodScheduled: ${c.reason ?? ''} ${c.message ?? ''}` : ''}`;
}

/** Waits until `total` pods of `kind` are Running, with progress (and an ETA) on stderr. */
async function awaitRunning(
  raw: Raw,
  w: PodWatch,
  kind: Kind,
  total: number,
  what: string,
  t0: number,
  c: Creating,
  qps: number,
  alive: () => void,
): Promise<void> {
  let last = -1;
  let moved = performance.now();
  let logged = 0;
  for (;;) {
    if (c.failed) throw c.failed;
    if (w.failed) throw w.failed;
    alive();
    const n = w.counts[kind];
    if (c.done && n.running >= total) break;
    const now = performance.now();
    if (n.running !== last) {
      last = n.running;
      moved = now;
    } else if (c.done && now - moved > STALL_MS)
      throw new FakegpuError(
        'bench/sched',
        `${what}: ${n.running} of ${total} pods Running, none more for ${STALL_MS / 1000} s${await stuck(raw, w, kind)}`,
      );
    if (now - logged >= PROGRESS_MS) {
      logged = now;
      const elapsed = (now - t0) / 1000;
      const byRate = n.running > 0 ? ((total - n.running) * elapsed) / n.running : Number.NaN;
      const byCreation = qps > 0 ? (total - n.created) / qps : 0;
      log(
        `${what}: ${n.created}/${total} created, ${n.bound} bound, ${n.running} Running; ${f(elapsed, 1)} s, ETA ${Number.isFinite(byRate) ? `${f(Math.max(byRate, byCreation), 0)} s` : '?'}`,
      );
    }
    await sleep(POLL_MS);
  }
  log(`${what}: all ${total} pods Running after ${f(seconds(t0), 1)} s`);
}

export interface Workload {
  fill: Part;
  churn: Part | null;
  /** Short-lived pods deleted after their runtime while the churn lasted. */
  churnDeleted: number;
  watchRelists: number;
}

/** Fill, then churn, in the namespace, with claims from `template`; `alive` throws once the fleet is gone. */
export async function workload(
  cfg: Config,
  kc: KubeConfig,
  raw: Raw,
  phase: string,
  template: string,
  capacity: number,
  alive: () => void,
): Promise<Workload> {
  const fillPods = Math.floor(capacity * cfg.fill);
  const churnPods = cfg.churnS * cfg.churnQps;
  const concurrent = cfg.churnQps * (cfg.churnRuntimeS + 5);
  if (churnPods > 0 && fillPods + Math.min(concurrent, churnPods) > capacity)
    log(
      `${phase}: warning: ${fillPods} fill pods and about ${Math.min(concurrent, churnPods)} short-lived ones at once exceed ${capacity} devices; churn pods will wait for devices`,
    );
  // The scheduler's informers take in the new slices, class and template before the clock starts.
  await sleep(SETTLE_MS);
  const w = new PodWatch(kc, raw);
  await w.start();
  const timers = new Set<NodeJS.Timeout>();
  let churnDeleted = 0;
  try {
    const post = async (name: string, kind: Kind): Promise<void> => {
      w.add(name, kind);
      await raw.ok('POST', PODS_PATH, podBody(name, template, kind, cfg.placement));
    };
    const what = `${phase} fill (${cfg.fillQps > 0 ? `${cfg.fillQps} pods/s` : 'unpaced'})`;
    log(`${what}: ${fillPods} long-running pods, ${f(cfg.fill * 100, 0)}% of ${capacity} devices`);
    const t0 = performance.now();
    const c = creating(
      t0,
      paced(fillPods, cfg.fillQps, cfg.inFlight, (i) => post(`${phase}-fill-${i}`, 'fill')),
    );
    await awaitRunning(raw, w, 'fill', fillPods, what, t0, c, cfg.fillQps, alive);
    const fill = part(w.recs.values(), 'fill', t0, c.createdS);

    let churn: Part | null = null;
    if (churnPods > 0) {
      // KWOK's stages complete Job pods at once, never after a while: a pod's end is its deletion here.
      w.onRunning = (name, r) => {
        if (r.kind !== 'churn') return;
        const t = setTimeout(() => {
          timers.delete(t);
          churnDeleted++;
          void raw.send('DELETE', `${PODS_PATH}/${name}`).catch(() => undefined);
        }, cfg.churnRuntimeS * 1000);
        timers.add(t);
      };
      const whatChurn = `${phase} churn (${cfg.churnQps} pods/s for ${cfg.churnS} s, ${cfg.churnRuntimeS} s each)`;
      log(`${whatChurn}: ${churnPods} short-lived pods`);
      const t1 = performance.now();
      const cc = creating(
        t1,
        paced(churnPods, cfg.churnQps, cfg.inFlight, (i) => post(`${phase}-churn-${i}`, 'churn')),
      );
      await awaitRunning(raw, w, 'churn', churnPods, whatChurn, t1, cc, cfg.churnQps, alive);
      churn = part(w.recs.values(), 'churn', t1, cc.createdS);
    }
    return { fill, churn, churnDeleted, watchRelists: w.relists };
  } finally {
    for (const t of timers) clearTimeout(t);
    w.stop();
  }
}
