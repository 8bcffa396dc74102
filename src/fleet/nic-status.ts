import type { Logger } from 'pino';
import type { Machine } from '../model/hardware/machine.js';
import { nicDeviceName } from '../model/nic/attributes.js';
import { nicClaimStatus, nicLink, type NicLink } from '../model/nic/status.js';
import type { ApiClient } from '../kube/client.js';
import { Informer } from '../kube/informer.js';
import type { ClaimStatusApi } from '../kube/claim-status.js';
import { Periodic } from '../kube/periodic.js';
import { CLAIMS_PATH, type ListedClaim, type ResourceClaim } from '../kube/types/claim.js';

/**
 * DRANET's claim status for KWOK nodes: no kubelet prepares their claims and no NRI hook sees their
 * pods start, so the fleet writes `status.devices` (`model/nic/status.ts`) for each claim of the NIC
 * driver on a served node once it is reserved for a pod (the scheduler reserves it as it binds the pod,
 * which KWOK then runs). One writer per node: only the leader runs a `Fleet`, and a sharded replica
 * links only the nodes of the shards it holds (`link` is undefined for the others). A claim whose status
 * already has the driver's entry for each of its devices is left alone: a new leader rewrites nothing.
 */

export const NIC_STATUS_PERIOD_MS = 1000;

export interface FleetNicStatusOptions {
  driverName: string;
  api: ClaimStatusApi;
  /** Claims waiting for their status (`pendingNicClaim`): an informer's, its snapshot undefined until listed. */
  claims: { snapshot(): readonly ResourceClaim[] | undefined; start?(): void; stop?(): void };
  /** A served node's NIC by device name; undefined: not the fleet's node, or no such NIC. */
  link(node: string, device: string): NicLink | undefined;
  log: Logger;
  periodMs?: number | undefined;
  now?: (() => Date) | undefined;
}

/** A claim of `driver` reserved for a pod and missing some of its device entries; else null. */
export function pendingNicClaim(driver: string, obj: unknown): ResourceClaim | null {
  const c = obj as ListedClaim;
  const { name, namespace, uid } = c.metadata ?? {};
  if (!name || !namespace || !uid || (c.status?.reservedFor ?? []).length === 0) return null;
  const results = (c.status?.allocation?.devices?.results ?? []).filter((r) => r.driver === driver);
  const written = new Set(
    (c.status?.devices ?? []).filter((d) => d.driver === driver).map((d) => `${d.pool}/${d.device}`),
  );
  if (results.length === 0 || results.every((r) => written.has(`${r.pool}/${r.device}`))) return null;
  // Kept whole but for what the status reads: results and configs.
  return {
    metadata: { name, namespace, uid },
    status: { allocation: c.status?.allocation as NonNullable<ResourceClaim['status']>['allocation'] },
  };
}

/** The NIC named `device` of a node's machine, as it is on that node; undefined: none. */
export function nicLinkOn(machine: Machine | undefined, node: string, device: string): NicLink | undefined {
  const nic = machine?.nics.find((n) => !n.primary && nicDeviceName(n) === device);
  return machine && nic ? nicLink(nic, machine.nodeName, node) : undefined;
}

/** The claims the fleet's NIC status reads, kept by a watch, each reduced on arrival. */
export function pendingNicClaims(http: ApiClient, driver: string, log: Logger): Informer<ResourceClaim> {
  return new Informer(http, CLAIMS_PATH, {}, (c) => pendingNicClaim(driver, c), log);
}

export class FleetNicStatus {
  private readonly loop: Periodic;
  /** Claim UIDs written this term, until the watch shows them done; a failed write is tried again. */
  private readonly written = new Set<string>();
  failures = 0;

  constructor(private readonly o: FleetNicStatusOptions) {
    this.loop = new Periodic(() => this.tick(), {
      periodMs: o.periodMs ?? NIC_STATUS_PERIOD_MS,
      log: o.log,
      what: 'NIC claim status not written',
    });
  }

  start(): void {
    this.o.claims.start?.();
    this.loop.start();
  }

  stop(): Promise<void> {
    this.o.claims.stop?.();
    return this.loop.stop();
  }

  async tick(): Promise<void> {
    const claims = this.o.claims.snapshot();
    if (claims === undefined) return;
    const pending = new Set(claims.map((c) => c.metadata.uid));
    for (const uid of this.written) if (!pending.has(uid)) this.written.delete(uid);
    for (const c of claims) {
      if (this.written.has(c.metadata.uid)) continue;
      for (const pool of new Set((c.status?.allocation?.devices?.results ?? []).map((r) => r.pool)))
        await this.write(c, pool);
    }
  }

  private async write(c: ResourceClaim, pool: string): Promise<void> {
    const { driverName: driver, log } = this.o;
    const ref = `${c.metadata.namespace}/${c.metadata.name}`;
    const { apply, errors } = nicClaimStatus(c, {
      driver,
      pool,
      link: (d) => this.o.link(pool, d),
      now: (this.o.now ?? (() => new Date()))(),
    });
    if (errors.length > 0) {
      // DRANET's prepare refuses the config: no status, and no point asking again.
      this.written.add(c.metadata.uid);
      log.warn({ claim: ref, errors }, 'claim status not written: DRANET refuses its config');
    }
    if (!apply) return;
    try {
      await this.o.api.applyStatus(c.metadata.namespace, c.metadata.name, apply, {
        fieldManager: driver,
        force: true,
      });
      this.written.add(c.metadata.uid);
    } catch (e) {
      this.failures++;
      log.warn(
        { claim: ref, err: e instanceof Error ? e.message : String(e) },
        'Failed to update status for claim; retried next pass',
      );
    }
  }
}
