/**
 * NVIDIA's ComputeDomain API as the controller, the kubelet plugin and the IMEX daemon share it: the
 * group, the labels and finalizer that tie a domain's objects together, and the shapes fakegpu reads of
 * ComputeDomains and ComputeDomainCliques (their schemas, which the CRDs in deploy/crds/ are generated
 * from, are schema.ts; the API server validates). Facts: compute-domains.md §1–2.
 */

export const CD_GROUP_VERSION = 'resource.nvidia.com/v1beta1';
const CD_API = `/apis/${CD_GROUP_VERSION}`;
/** Every ComputeDomain of the cluster. */
export const COMPUTE_DOMAINS_PATH = `${CD_API}/computedomains`;

/** On the domain, its templates and DaemonSet, and on nodes (set at channel prepare): the domain's UID. */
export const DOMAIN_LABEL = 'resource.nvidia.com/computeDomain';
/** On daemon pods and cliques: the clique the daemon's node is in ("" without NVLink fabric). */
export const CLIQUE_LABEL = 'resource.nvidia.com/computeDomain.cliqueID';
/** On the templates: `Workload` or `Daemon`. */
export const TARGET_LABEL = 'resource.nvidia.com/computeDomainTarget';
export const FINALIZER = 'resource.nvidia.com/computeDomain';
/** Set by GPU Feature Discovery (or NVIDIA's plugin with gpuCliqueLabelEnabled): `<clusterUUID>.<cliqueId>`. */
export const GPU_CLIQUE_LABEL = 'nvidia.com/gpu.clique';
/** NVIDIA's default IMEX domain size (the controller's maxNodesPerIMEXDomain), one NVL72 rack. */
export const MAX_NODES_PER_IMEX_DOMAIN = 18;
/** Where NVIDIA's docs install the driver; the cliques, daemon templates and DaemonSets live there. */
export const DEFAULT_DRIVER_NAMESPACE = 'nvidia-dra-driver-gpu';

export type NodeStatus = 'Ready' | 'NotReady';

export interface ComputeDomainNode {
  name: string;
  ipAddress: string;
  cliqueID: string;
  index: number;
  status: NodeStatus;
}

export interface DaemonEntry {
  nodeName: string;
  ipAddress: string;
  cliqueID: string;
  index: number;
  status: NodeStatus;
}

export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

export interface Metadata {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
  ownerReferences?: OwnerRef[];
}

export interface ComputeDomain {
  metadata: Metadata & { namespace: string; uid: string };
  spec: {
    numNodes?: number;
    channel: { resourceClaimTemplate: { name: string }; allocationMode?: 'Single' | 'All' };
  };
  status?: { status?: NodeStatus; nodes?: ComputeDomainNode[] };
}

export interface ComputeDomainClique {
  apiVersion: string;
  kind: 'ComputeDomainClique';
  metadata: Metadata;
  daemons?: DaemonEntry[];
}

/** What the controller and the daemon's stand-in read of a daemon pod. */
export interface DaemonPod {
  metadata: Metadata;
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
}

export function domainPath(namespace: string, name: string): string {
  return `${CD_API}/namespaces/${namespace}/computedomains/${name}`;
}

export function cliquesPath(namespace: string): string {
  return `${CD_API}/namespaces/${namespace}/computedomaincliques`;
}

/** A clique object is named `<domain UID>.<clique ID>`. */
export function cliqueName(domainUid: string, cliqueID: string): string {
  return `${domainUid}.${cliqueID}`;
}

export function podsPath(namespace: string): string {
  return `/api/v1/namespaces/${namespace}/pods`;
}

/** Both the DaemonSet and the daemon's ResourceClaimTemplate carry this name. */
export function daemonName(domainUid: string): string {
  return `computedomain-daemon-${domainUid}`;
}

export function podReady(p: DaemonPod): boolean {
  return (
    p.status?.phase === 'Running' &&
    (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

/**
 * fakegpu's own node label naming the rack (NVLink domain) of a simulated node: nodes of one rack share
 * a clique. Without it a node is a rack of its own, unless its profile names one.
 */
export const RACK_LABEL = 'fakegpu.dev/rack';
