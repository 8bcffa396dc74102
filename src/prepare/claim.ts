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
