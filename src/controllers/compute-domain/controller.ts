import type { Logger } from 'pino';
import type { ObjectApi } from '../../kube/objects.js';
import { Periodic } from '../../kube/periodic.js';
import { daemonSet, daemonTemplate, workloadTemplate, type DaemonSetOptions } from './objects.js';
import {
  CD_GROUP_VERSION,
  cliquesPath,
  COMPUTE_DOMAINS_PATH,
  daemonName,
  DOMAIN_LABEL,
  domainPath,
  FINALIZER,
  podsPath,
  type ComputeDomain,
  type ComputeDomainClique,
  type DaemonPod,
  type Metadata,
} from '../../model/compute-domain/resource.js';
import { domainStatus, staleEntries } from './status.js';

/**
 * NVIDIA's ComputeDomain controller, emulated: every period it lists what the domains own and moves
 * each domain one step towards what it should be. A live domain gets its finalizer, its two claim
 * templates and its DaemonSet, stale clique entries pruned and `status` mirrored from the cliques; a
 * deleted one has its objects deleted, the nodes labelled for it unlabelled, the objects' finalizers
 * dropped and, once they are gone, its own. Nodes and objects labelled for a domain that no longer
 * exists are cleaned up the same way. Level-triggered, so a restart or a lost write costs one period.
 * Facts: compute-domains.md §2 (2 s status period, deletion order).
 */

export const STATUS_PERIOD_MS = 2000;
const RCTS_PATH = '/apis/resource.k8s.io/v1/resourceclaimtemplates';
const rctPath = (ns: string, name: string) =>
  `/apis/resource.k8s.io/v1/namespaces/${ns}/resourceclaimtemplates/${name}`;
const dsCollection = (ns: string) => `/apis/apps/v1/namespaces/${ns}/daemonsets`;
const nodePath = (name: string) => `/api/v1/nodes/${name}`;

export interface ControllerOptions extends DaemonSetOptions {
  api: ObjectApi;
  log: Logger;
  periodMs?: number;
}

interface Owned {
  metadata: Metadata;
}

interface World {
  domains: ComputeDomain[];
  nodes: Owned[];
  cliques: ComputeDomainClique[];
  pods: DaemonPod[];
  templates: Owned[];
  daemonSets: Owned[];
}

const uidOf = (o: Owned) => o.metadata.labels?.[DOMAIN_LABEL] ?? '';
const withoutFinalizer = (m: Metadata) => (m.finalizers ?? []).filter((f) => f !== FINALIZER);

export class ComputeDomainController {
  private readonly loop: Periodic;
  /** Orphans whose clean-up failed, each retried the next pass; tests and logs read it. */
  failures = 0;

  constructor(private readonly o: ControllerOptions) {
    this.loop = new Periodic(() => this.tick(), {
      periodMs: o.periodMs ?? STATUS_PERIOD_MS,
      log: o.log,
      what: 'ComputeDomain pass failed',
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass over every domain; each domain's failure is logged and the others go on. */
  async tick(): Promise<void> {
    const w = await this.read();
    const live = new Set<string>();
    for (const cd of w.domains) {
      live.add(cd.metadata.uid);
      try {
        if (cd.metadata.deletionTimestamp) await this.teardown(cd.metadata.uid, w, cd);
        else await this.ensure(cd, w);
      } catch (e) {
        this.o.log.warn(
          {
            domain: `${cd.metadata.namespace}/${cd.metadata.name}`,
            err: e instanceof Error ? e.message : String(e),
          },
          'ComputeDomain not reconciled',
        );
      }
    }
    // What is labelled for a domain that is gone: a sweep, as NVIDIA's controller does for nodes.
    const orphans = new Set(
      [...w.nodes, ...w.templates, ...w.daemonSets].map(uidOf).filter((u) => u && !live.has(u)),
    );
    for (const uid of orphans)
      try {
        await this.teardown(uid, w, null);
      } catch (e) {
        // One orphan's failure leaves the others to this pass, itself to the next.
        this.failures++;
        this.o.log.warn(
          { domainUID: uid, err: e instanceof Error ? e.message : String(e) },
          "orphaned ComputeDomain's objects not cleaned up; retried next pass",
        );
      }
  }

  private async read(): Promise<World> {
    const { api, namespace: ns } = this.o;
    const sel = { labelSelector: DOMAIN_LABEL };
    // Nodes before domains: a label seen here names a domain that existed when it was set, so a domain
    // missing from the later list is really gone.
    const nodes = await api.list<Owned>('/api/v1/nodes', sel, true);
    const [domains, cliques, pods, templates, daemonSets] = await Promise.all([
      api.list<ComputeDomain>(COMPUTE_DOMAINS_PATH),
      api.list<ComputeDomainClique>(cliquesPath(ns), sel),
      api.list<DaemonPod>(podsPath(ns), sel),
      api.list<Owned>(RCTS_PATH, sel, true),
      api.list<Owned>(dsCollection(ns), sel, true),
    ]);
    return { domains, nodes, cliques, pods, templates, daemonSets };
  }

  private async ensure(cd: ComputeDomain, w: World): Promise<void> {
    const { api, namespace: ns } = this.o;
    const uid = cd.metadata.uid;
    const path = domainPath(cd.metadata.namespace, cd.metadata.name);
    if (!(cd.metadata.finalizers ?? []).includes(FINALIZER))
      await api.patch(path, {
        metadata: {
          finalizers: [...(cd.metadata.finalizers ?? []), FINALIZER],
          resourceVersion: cd.metadata.resourceVersion,
        },
      });
    const has = (list: Owned[], namespace: string, name: string) =>
      list.some((o) => o.metadata.namespace === namespace && o.metadata.name === name && uidOf(o) === uid);
    const create = async (collection: string, obj: object) => {
      try {
        await api.create(collection, obj);
      } catch (e) {
        // Made by a pass that raced this one, or a name the user already uses: logged by the caller.
        if (!(e instanceof Error && 'code' in e && e.code === 409)) throw e;
      }
    };
    const rctName = cd.spec.channel.resourceClaimTemplate.name;
    if (!has(w.templates, cd.metadata.namespace, rctName))
      await create(
        `/apis/resource.k8s.io/v1/namespaces/${cd.metadata.namespace}/resourceclaimtemplates`,
        workloadTemplate(cd),
      );
    if (!has(w.templates, ns, daemonName(uid)))
      await create(
        `/apis/resource.k8s.io/v1/namespaces/${ns}/resourceclaimtemplates`,
        daemonTemplate(cd, ns),
      );
    if (!has(w.daemonSets, ns, daemonName(uid))) await create(dsCollection(ns), daemonSet(cd, this.o));

    const pods = w.pods.filter((p) => uidOf(p) === uid);
    const cliques: ComputeDomainClique[] = [];
    for (const c of w.cliques.filter((x) => uidOf(x) === uid)) {
      const stale = new Set(staleEntries(c, pods));
      if (stale.size === 0) {
        cliques.push(c);
        continue;
      }
      const daemons = (c.daemons ?? []).filter((d) => !stale.has(d.nodeName));
      const at = `${cliquesPath(ns)}/${c.metadata.name}`;
      if (daemons.length === 0) await api.delete(at);
      else {
        // Only the version read: a daemon that entered meanwhile is kept by the next pass instead.
        await api.replace(at, { ...c, apiVersion: CD_GROUP_VERSION, kind: 'ComputeDomainClique', daemons });
        cliques.push({ ...c, daemons });
      }
    }
    const want = domainStatus(cd, cliques, pods);
    const now = { status: cd.status?.status, nodes: cd.status?.nodes ?? [] };
    if (JSON.stringify(now) !== JSON.stringify(want)) await api.patch(`${path}/status`, { status: want });
  }

  /** NVIDIA's order: objects deleted, nodes unlabelled, the objects' finalizers dropped, then the domain's. */
  private async teardown(uid: string, w: World, cd: ComputeDomain | null): Promise<void> {
    const { api } = this.o;
    const paths = [
      ...w.templates
        .filter((o) => uidOf(o) === uid)
        .map((o) => ({ o, path: rctPath(o.metadata.namespace ?? '', o.metadata.name) })),
      ...w.daemonSets
        .filter((o) => uidOf(o) === uid)
        .map((o) => ({ o, path: `${dsCollection(o.metadata.namespace ?? '')}/${o.metadata.name}` })),
    ];
    for (const { path } of paths) await api.delete(path);
    // Every node is tried; the first failure then stops the teardown before any finalizer is dropped.
    let unlabelled: Error | null = null;
    for (const n of w.nodes.filter((x) => uidOf(x) === uid))
      try {
        await api.patch(nodePath(n.metadata.name), { metadata: { labels: { [DOMAIN_LABEL]: null } } });
      } catch (e) {
        if (!(e instanceof Error && 'code' in e && e.code === 404))
          unlabelled ??= e instanceof Error ? e : new Error(String(e));
      }
    if (unlabelled !== null) throw unlabelled;
    for (const { o, path } of paths)
      if ((o.metadata.finalizers ?? []).includes(FINALIZER))
        try {
          await api.patch(path, { metadata: { finalizers: withoutFinalizer(o.metadata) } });
        } catch (e) {
          if (!(e instanceof Error && 'code' in e && e.code === 404)) throw e;
        }
    if (!cd || !(cd.metadata.finalizers ?? []).includes(FINALIZER)) return;
    for (const { path } of paths) if ((await api.get(path)) !== null) return;
    await api.patch(domainPath(cd.metadata.namespace, cd.metadata.name), {
      metadata: { finalizers: withoutFinalizer(cd.metadata), resourceVersion: cd.metadata.resourceVersion },
    });
  }
}
