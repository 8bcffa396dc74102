/** One allocated device of a claim. */
export interface AllocationResult {
  request: string;
  driver: string;
  pool: string;
  device: string;
  adminAccess?: boolean;
  shareID?: string;
}

export interface AllocationConfig {
  source: 'FromClass' | 'FromClaim';
  requests?: string[];
  opaque?: { driver: string; parameters: unknown };
}

/** Who a claim is reserved for: a pod, almost always. */
export interface ConsumerReference {
  apiGroup?: string;
  resource: string;
  name: string;
  uid: string;
}

/** The one shape of a `resource.k8s.io/v1` ResourceClaim: the parts that fakegpu reads. */
export interface ResourceClaim {
  metadata: { name: string; namespace: string; uid: string; annotations?: Record<string, string> };
  status?: {
    allocation?: {
      devices?: { results?: AllocationResult[]; config?: AllocationConfig[] };
    };
    reservedFor?: ConsumerReference[];
    /** Drivers' per-device status (KEP-4817): which devices a driver has written it for. */
    devices?: { driver: string; pool: string; device: string }[];
  };
}

type DeepPartial<T> = T extends (infer E)[]
  ? DeepPartial<E>[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** A ResourceClaim from a list or a watch, read without trusting that any field is there. */
export type ListedClaim = DeepPartial<ResourceClaim>;

/** ResourceClaims of every namespace. */
export const CLAIMS_PATH = '/apis/resource.k8s.io/v1/resourceclaims';

export function claimPath(namespace: string, name: string): string {
  return `/apis/resource.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/resourceclaims/${encodeURIComponent(name)}`;
}

/** `request/subrequest` (prioritized list) → `request`, the name containers refer to. */
export function baseRequest(request: string): string {
  const i = request.indexOf('/');
  return i < 0 ? request : request.slice(0, i);
}

const UID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * A claim UID as the kubelet sends it, before it names any file: the API server makes UUIDs, and
 * nothing else (an empty string, `../x`, a slash) may reach a path.
 */
export function checkClaimUid(uid: string): string | null {
  return UID.test(uid)
    ? null
    : `claim UID ${JSON.stringify(uid.length > 80 ? `${uid.slice(0, 80)}…` : uid)} is not a Kubernetes UID (1 to 128 letters, digits, '-', '_' or '.', starting with a letter or digit)`;
}

/** A claim as NVIDIA's plugins name it in errors (`ResourceClaimToString`): `<namespace>/<name>:<uid>`. */
export function claimString(c: { namespace: string; name: string; uid: string }): string {
  return `${c.namespace}/${c.name}:${c.uid}`;
}
