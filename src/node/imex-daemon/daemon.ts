import type { Logger } from 'pino';
import { ApiError } from '../../kube/client.js';
import type { ObjectApi } from '../../kube/objects.js';
import { Periodic } from '../../kube/periodic.js';
import {
  CLIQUE_LABEL,
  cliqueName,
  cliquesPath,
  DOMAIN_LABEL,
  podsPath,
  type ComputeDomainClique,
  type DaemonPod,
} from '../../model/compute-domain/resource.js';
import { enterClique, type DaemonSelf } from '../../controllers/compute-domain/status.js';

/**
 * The IMEX daemon's part towards the API server, played for the daemon pods of the nodes fakegpu serves
 * (the node plugin's own node; the fleet's KWOK nodes). NVIDIA's daemon enters itself into its clique
 * from inside its pod; our daemon image only honours the `check` contract, and this stand-in writes
 * the same entry from outside: node, pod IP, clique, lowest free index, NotReady until the pod is Ready,
 * removed when the pod goes; the pod gets its clique label. Written by resourceVersion, so agents of
 * different nodes never lose each other's entries. Facts: compute-domains.md §2, §4.
 */

export const STAND_IN_PERIOD_MS = 1000;

export interface StandInOptions {
  api: ObjectApi;
  /** The driver's namespace: daemon pods and cliques live there. */
  namespace: string;
  /** The clique of a node this agent speaks for ("" without NVLink fabric); undefined: not ours. */
  cliqueOf(node: string): string | undefined;
  log: Logger;
  periodMs?: number;
  /** The daemon pods now (e.g. an informer's); undefined: not known yet. Default: listed each pass. */
  pods?: () => readonly Pod[] | undefined;
}

export type Pod = DaemonPod & { metadata: { uid: string } };

/** What the stand-in and the controller read of a daemon pod, and nothing else: kept by informers. */
export function leanPod(obj: unknown): Pod {
  const p = obj as Pod;
  const labels = p.metadata.labels ?? {};
  const ready = (p.status?.conditions ?? []).filter((c) => c.type === 'Ready');
  return {
    metadata: {
      name: p.metadata.name,
      uid: p.metadata.uid,
      labels: Object.fromEntries(
        [DOMAIN_LABEL, CLIQUE_LABEL].flatMap((k) => (labels[k] === undefined ? [] : [[k, labels[k]]])),
      ),
      ...(p.metadata.deletionTimestamp ? { deletionTimestamp: p.metadata.deletionTimestamp } : {}),
    },
    spec: { ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}) },
    status: {
      ...(p.status?.phase ? { phase: p.status.phase } : {}),
      ...(p.status?.podIP ? { podIP: p.status.podIP } : {}),
      conditions: ready.map((c) => ({ type: c.type, status: c.status })),
    },
  };
}

export class DaemonStandIn {
  private readonly loop: Periodic;

  constructor(private readonly o: StandInOptions) {
    this.loop = new Periodic(() => this.tick(), {
      periodMs: o.periodMs ?? STAND_IN_PERIOD_MS,
      log: o.log,
      what: 'IMEX daemon entries not written',
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  async tick(): Promise<void> {
    const { api, namespace: ns } = this.o;
    const sel = { labelSelector: DOMAIN_LABEL };
    const pods = this.o.pods ? this.o.pods() : await api.list<Pod>(podsPath(ns), sel);
    if (pods === undefined) return;
    const liveUids = new Set(pods.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.uid));
    /** By clique object name: the domain, clique and this agent's daemons in it. */
    const groups = new Map<string, { uid: string; cliqueID: string; present: DaemonSelf[] }>();
    for (const p of pods) {
      const node = p.spec?.nodeName;
      const clique = node === undefined ? undefined : this.o.cliqueOf(node);
      if (node === undefined || clique === undefined || p.metadata.deletionTimestamp) continue;
      if (p.status?.phase !== 'Running') continue;
      const uid = p.metadata.labels?.[DOMAIN_LABEL] ?? '';
      if (p.metadata.labels?.[CLIQUE_LABEL] !== clique)
        await this.ignoreGone(
          api.patch(`${podsPath(ns)}/${p.metadata.name}`, {
            metadata: { labels: { [CLIQUE_LABEL]: clique } },
          }),
        );
      // Without a clique the daemon idles: the controller reads its pod instead.
      if (clique === '' || uid === '') continue;
      const key = cliqueName(uid, clique);
      const g = groups.get(key) ?? { uid, cliqueID: clique, present: [] };
      g.present.push({ nodeName: node, cliqueID: clique, pod: p });
      groups.set(key, g);
    }
    const cliques = await api.list<ComputeDomainClique>(cliquesPath(ns), sel);
    const byName = new Map(cliques.map((c) => [c.metadata.name, c]));
    for (const c of cliques) {
      const uid = c.metadata.labels?.[DOMAIN_LABEL];
      const cliqueID = c.metadata.labels?.[CLIQUE_LABEL];
      if (uid && cliqueID && !groups.has(c.metadata.name))
        groups.set(c.metadata.name, { uid, cliqueID, present: [] });
    }
    for (const [name, g] of groups) {
      const current = byName.get(name) ?? null;
      const gone = new Set(
        (current?.daemons ?? [])
          .map((d) => d.nodeName)
          .filter((n) => this.o.cliqueOf(n) !== undefined && !g.present.some((d) => d.nodeName === n)),
      );
      const next = enterClique(g.uid, g.cliqueID, ns, current, g.present, gone, liveUids);
      if (next === null) continue;
      const at = `${cliquesPath(ns)}/${name}`;
      try {
        if ('delete' in next) await api.delete(at);
        else if (current) await api.replace(at, next);
        else await api.create(cliquesPath(ns), next);
      } catch (e) {
        // Another node's daemon wrote first: the next pass reads its entry and adds ours beside it.
        if (e instanceof ApiError && (e.code === 409 || e.code === 404)) continue;
        throw e;
      }
    }
  }

  private async ignoreGone(p: Promise<unknown>): Promise<void> {
    try {
      await p;
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 404)) throw e;
    }
  }
}
