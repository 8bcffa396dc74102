import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from './client.js';
import { claimPath } from './types/claim.js';

/**
 * Server-side apply of a ResourceClaim's status, as a DRA driver writes its devices' status (KEP-4817):
 * `PATCH …/resourceclaims/<name>/status` with an apply patch, the driver's field manager and `force`
 * (DRANET pkg/driver/nri_hooks.go: `ApplyStatus(…, ApplyOptions{FieldManager: driverName, Force: true})`).
 * Needs only `patch` on `resourceclaims/status`. An API server whose DRAResourceClaimDeviceStatus gate
 * is off drops the fields and answers 200 all the same.
 */

export interface ClaimStatusApi {
  applyStatus(
    namespace: string,
    name: string,
    body: object,
    o: { fieldManager: string; force: boolean },
  ): Promise<void>;
}

/** DRANET's deadline for one status write: it runs beside the pod's start, never in its way. */
export const CLAIM_STATUS_TIMEOUT_MS = 3000;

const APPLY = 'application/apply-patch+yaml';

export class KubeClaimStatus implements ClaimStatusApi {
  private readonly http: ApiClient;

  constructor(kc: KubeConfig, timeoutMs = CLAIM_STATUS_TIMEOUT_MS) {
    // A client of its own: the deadline is per client, and the readers' 30 s is ten times DRANET's.
    this.http = new ApiClient(kc, { timeoutMs });
  }

  async applyStatus(
    namespace: string,
    name: string,
    body: object,
    o: { fieldManager: string; force: boolean },
  ): Promise<void> {
    const q = new URLSearchParams({ fieldManager: o.fieldManager, force: String(o.force) });
    // JSON is YAML: the apply patch goes as the JSON client-go sends.
    await this.http.send(
      'PATCH',
      `${claimPath(namespace, name)}/status?${q.toString()}`,
      JSON.stringify(body),
      'application/json',
      APPLY,
    );
  }
}
