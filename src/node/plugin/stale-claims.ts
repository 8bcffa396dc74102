import type { Logger } from 'pino';
import { ApiError, type ApiClient } from '../../kube/client.js';
import { claimPath } from '../../kube/types/claim.js';
import type { CheckpointStore } from '../checkpoint/checkpoint.js';

/**
 * Claims the checkpoint holds whose ResourceClaim the API server no longer has (deleted, or replaced by
 * one of the same name with another UID) are unprepared by the plugin itself: the kubelet that would
 * have asked is gone with its state (killed with the claim prepared, or a rebuilt cluster), and without
 * this their devices stay taken for good. NVIDIA's `CheckpointCleanupManager` (cleanup.go at 95932046)
 * does this at start and every 10 minutes for PrepareStarted claims only; fakegpu rolls those back at
 * start already, so it looks at the completed ones, which are what held a device here. A claim whose
 * object is gone has no pod running with it: the API server keeps a reserved claim until its consumers
 * are done. The lookup is a GET by name (cheap) with the UID compared, as NVIDIA's is; a failed lookup
 * leaves the claim alone until the next pass.
 */

export const STALE_PERIOD_MS = 10 * 60_000;
/** After a pass in which a lookup failed (the API server away at start), the next comes sooner. */
export const STALE_RETRY_MS = 30_000;

export interface ClaimOwner {
  name: string;
  checkpoint: CheckpointStore;
  state: { unprepare(uid: string): Promise<void> };
}

/** The claim's UID as the API server has it now; null when it has no claim of that name. */
export type ClaimLookup = (namespace: string, name: string) => Promise<string | null>;

export function apiLookup(api: ApiClient): ClaimLookup {
  return async (namespace, name) => {
    try {
      const c = JSON.parse(await api.send('GET', claimPath(namespace, name))) as {
        metadata?: { uid?: string };
      };
      return c.metadata?.uid ?? null;
    } catch (e) {
      if (e instanceof ApiError && e.code === 404) return null;
      throw e;
    }
  };
}

export interface StalePass {
  released: { driver: string; uid: string; claim: string }[];
  /** Lookups that failed: those claims are looked at again next pass. */
  failed: number;
}

/** One pass over every driver's checkpoint: each claim looked up, one at a time, the stale unprepared. */
export async function releaseStaleClaims(
  owners: readonly ClaimOwner[],
  lookup: ClaimLookup,
  log: Logger,
): Promise<StalePass> {
  const out: StalePass = { released: [], failed: 0 };
  for (const d of owners) {
    for (const [uid, c] of d.checkpoint.all()) {
      if (c.state !== 'PrepareCompleted' || !c.name) continue;
      const claim = `${c.namespace}/${c.name}`;
      let now: string | null;
      try {
        now = await lookup(c.namespace, c.name);
      } catch (e) {
        out.failed++;
        log.info(
          { driver: d.name, claim, uid, err: e instanceof Error ? e.message : String(e) },
          'could not ask the API server whether a prepared claim still exists; asking again later',
        );
        continue;
      }
      if (now === uid) continue;
      // The kubelet may have unprepared it while we asked: unprepare of a claim not held is a no-op.
      await d.state.unprepare(uid);
      out.released.push({ driver: d.name, uid, claim });
      log.warn(
        { driver: d.name, claim, uid, apiServerUid: now },
        now === null
          ? 'unprepared a claim the API server no longer has'
          : 'unprepared a claim the API server has replaced by another of the same name',
      );
    }
  }
  return out;
}

export interface StaleSweeper {
  /** The first pass, for tests and for start-up order; later passes run on their own. */
  readonly first: Promise<StalePass>;
  stop(): Promise<void>;
}

/** A pass now, then every `periodMs` (sooner after a failed lookup), until stopped. */
export function sweepStaleClaims(
  owners: readonly ClaimOwner[],
  lookup: ClaimLookup,
  o: { log: Logger; periodMs?: number; retryMs?: number; onPass?: (p: StalePass) => void },
): StaleSweeper {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  const run = (): Promise<StalePass> => {
    const p = releaseStaleClaims(owners, lookup, o.log);
    running = p.then(
      (done) => {
        o.onPass?.(done);
        next(done.failed > 0);
      },
      (e: unknown) => {
        o.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'releasing stale claims failed');
        next(true);
      },
    );
    return p;
  };
  const next = (soon: boolean): void => {
    if (stopped) return;
    timer = setTimeout(
      () => void run(),
      soon ? (o.retryMs ?? STALE_RETRY_MS) : (o.periodMs ?? STALE_PERIOD_MS),
    );
  };
  const first = run();
  return {
    first,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running.catch(() => undefined);
    },
  };
}
