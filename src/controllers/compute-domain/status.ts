import {
  CD_GROUP_VERSION,
  CLIQUE_LABEL,
  cliqueName,
  DOMAIN_LABEL,
  MAX_NODES_PER_IMEX_DOMAIN,
  podReady,
  type ComputeDomain,
  type ComputeDomainClique,
  type ComputeDomainNode,
  type DaemonEntry,
  type DaemonPod,
  type NodeStatus,
  type OwnerRef,
} from '../../model/compute-domain/resource.js';

/**
 * How a domain's status comes about, as NVIDIA's daemon and controller compute it (compute-domains.md
 * §2): each daemon puts itself into its clique with the lowest free index, NotReady until its pod is
 * Ready; the controller mirrors every clique entry that still has a daemon pod, plus daemons of nodes
 * without a clique, into `status.nodes`, and the domain is Ready once it has `numNodes` nodes and none
 * is NotReady. Pure: callers list and write.
 */

export interface DomainStatus {
  status: NodeStatus;
  nodes: ComputeDomainNode[];
}

/** The domain's nodes and global status from its cliques and daemon pods. */
export function domainStatus(
  cd: ComputeDomain,
  cliques: readonly ComputeDomainClique[],
  pods: readonly DaemonPod[],
): DomainStatus {
  const live = new Set(pods.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.spec?.nodeName));
  const nodes: ComputeDomainNode[] = [];
  for (const c of cliques)
    for (const d of c.daemons ?? [])
      if (live.has(d.nodeName))
        nodes.push({
          name: d.nodeName,
          ipAddress: d.ipAddress,
          cliqueID: d.cliqueID,
          index: d.index,
          status: d.status,
        });
  for (const p of pods) {
    const node = p.spec?.nodeName;
    if (!node || p.metadata.deletionTimestamp || p.metadata.labels?.[CLIQUE_LABEL] !== '') continue;
    nodes.push({
      name: node,
      ipAddress: p.status?.podIP ?? '',
      cliqueID: '',
      index: -1,
      status: podReady(p) ? 'Ready' : 'NotReady',
    });
  }
  nodes.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const want = cd.spec.numNodes ?? 0;
  const ready = nodes.length >= want && nodes.every((n) => n.status === 'Ready');
  return { status: ready ? 'Ready' : 'NotReady', nodes };
}

/** Clique entries whose node no longer runs a daemon pod of the domain: the controller prunes them. */
export function staleEntries(clique: ComputeDomainClique, pods: readonly DaemonPod[]): string[] {
  const live = new Set(pods.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.spec?.nodeName));
  return (clique.daemons ?? []).filter((d) => !live.has(d.nodeName)).map((d) => d.nodeName);
}

/** A daemon as it would enter itself: the node's clique, its pod's IP and readiness. */
export interface DaemonSelf {
  nodeName: string;
  cliqueID: string;
  pod: DaemonPod & { metadata: { uid: string } };
}

/**
 * The clique after the given nodes' daemons entered (or left) it: `present` are this agent's daemons
 * running now, `gone` the nodes of this agent whose daemons went; entries of other nodes stay as they
 * are. Null: nothing changed. `{ delete: true }`: no daemon is left.
 */
export function enterClique(
  domainUid: string,
  cliqueID: string,
  namespace: string,
  current: ComputeDomainClique | null,
  present: readonly DaemonSelf[],
  gone: ReadonlySet<string>,
  livePodUids: ReadonlySet<string>,
): ComputeDomainClique | { delete: true } | null {
  const mine = new Map(present.map((d) => [d.nodeName, d]));
  const kept = (current?.daemons ?? []).filter((d) => !gone.has(d.nodeName) || mine.has(d.nodeName));
  const used = new Set(kept.filter((d) => !mine.has(d.nodeName)).map((d) => d.index));
  const daemons: DaemonEntry[] = [];
  const byNode = new Map(kept.map((d) => [d.nodeName, d]));
  for (const d of kept) if (!mine.has(d.nodeName)) daemons.push(d);
  const newcomers = [...mine.values()].sort((a, b) => (a.nodeName < b.nodeName ? -1 : 1));
  // Those already in keep their index; the rest take the lowest free ones, as each daemon does.
  for (const d of newcomers) {
    const had = byNode.get(d.nodeName);
    if (had && had.index >= 0) used.add(had.index);
  }
  for (const d of newcomers) {
    const had = byNode.get(d.nodeName);
    let index = had && had.index >= 0 ? had.index : -1;
    if (index < 0) {
      for (let i = 0; i < MAX_NODES_PER_IMEX_DOMAIN; i++)
        if (!used.has(i)) {
          index = i;
          break;
        }
      // A full domain: NVIDIA's daemon fails to enter and retries; this one waits likewise.
      if (index < 0) continue;
      used.add(index);
    }
    daemons.push({
      nodeName: d.nodeName,
      ipAddress: d.pod.status?.podIP ?? '',
      cliqueID,
      index,
      status: podReady(d.pod) ? 'Ready' : 'NotReady',
    });
  }
  daemons.sort((a, b) => a.index - b.index || (a.nodeName < b.nodeName ? -1 : 1));
  if (daemons.length === 0) return current ? { delete: true } : null;
  const refs: OwnerRef[] = (current?.metadata.ownerReferences ?? []).filter(
    (r) => livePodUids.has(r.uid) && ![...mine.values()].some((d) => d.pod.metadata.uid === r.uid),
  );
  for (const d of newcomers)
    if (daemons.some((e) => e.nodeName === d.nodeName))
      refs.push({ apiVersion: 'v1', kind: 'Pod', name: d.pod.metadata.name, uid: d.pod.metadata.uid });
  refs.sort((a, b) => (a.uid < b.uid ? -1 : 1));
  const next: ComputeDomainClique = {
    apiVersion: CD_GROUP_VERSION,
    kind: 'ComputeDomainClique',
    metadata: {
      ...(current?.metadata ?? {}),
      name: cliqueName(domainUid, cliqueID),
      namespace,
      labels: { ...(current?.metadata.labels ?? {}), [DOMAIN_LABEL]: domainUid, [CLIQUE_LABEL]: cliqueID },
      ownerReferences: refs,
    },
    daemons,
  };
  if (
    current &&
    JSON.stringify(current.daemons ?? []) === JSON.stringify(daemons) &&
    JSON.stringify(current.metadata.ownerReferences ?? []) === JSON.stringify(refs) &&
    current.metadata.labels?.[DOMAIN_LABEL] === domainUid &&
    current.metadata.labels[CLIQUE_LABEL] === cliqueID
  )
    return null;
  return next;
}
