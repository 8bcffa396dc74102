/** The parts of a `resource.k8s.io/v1` ResourceClaim that preparing reads. */
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

export interface ResourceClaim {
  metadata: { name: string; namespace: string; uid: string };
  status?: {
    allocation?: {
      devices?: { results?: AllocationResult[]; config?: AllocationConfig[] };
    };
  };
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
