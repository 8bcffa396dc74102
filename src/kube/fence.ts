import type { ListQuery } from './api.js';
import type { ObjectApi } from './objects.js';

/** A write not sent: the term of leadership it was made in has ended (or will before it could land). */
export class TermEnded extends Error {
  constructor(what: string) {
    super(`${what}: not sent, this replica's term has ended`);
    this.name = 'TermEnded';
  }
}

/**
 * What is left of a term ending at `until` (monotonic ms) as a request's deadline, at most `capMs` and
 * rounded up: null once the term has ended, undefined where it has no end (the client's own deadline).
 * The one rule every writer of a term follows (`fleet/reconciler.ts`, `fencedObjects`).
 */
export function termDeadline(until: number, now: number, capMs?: number): number | null | undefined {
  const ms = until - now;
  if (ms <= 0) return null;
  const capped = Math.min(capMs ?? Infinity, Math.ceil(ms));
  return Number.isFinite(capped) ? capped : undefined;
}

/**
 * The objects of a leader's term: each write goes out only before `until()` (monotonic ms, as
 * `Elected.leadingUntil`) and gets what is left of it as its deadline, so that none lands after a
 * standby may have begun, however slow the API server. Reads go through unchanged: a late read
 * changes nothing.
 */
export function fencedObjects(
  api: ObjectApi,
  until: () => number,
  now: () => number = () => performance.now(),
): ObjectApi {
  const left = (what: string, timeoutMs: number | undefined): number | undefined => {
    const d = termDeadline(until(), now(), timeoutMs);
    if (d === null) throw new TermEnded(what);
    return d;
  };
  const guarded = async <T>(what: string, timeoutMs: number | undefined, f: (t?: number) => Promise<T>) =>
    f(left(what, timeoutMs));
  return {
    list: <T>(c: string, q?: ListQuery, metadataOnly?: boolean) => api.list<T>(c, q, metadataOnly),
    get: <T>(p: string) => api.get<T>(p),
    create: <T>(c: string, o: object, t?: number) => guarded(`POST ${c}`, t, (d) => api.create<T>(c, o, d)),
    replace: <T>(p: string, o: object, t?: number) => guarded(`PUT ${p}`, t, (d) => api.replace<T>(p, o, d)),
    patch: <T>(p: string, o: object, t?: number) => guarded(`PATCH ${p}`, t, (d) => api.patch<T>(p, o, d)),
    delete: (p: string, rv?: string, t?: number) => guarded(`DELETE ${p}`, t, (d) => api.delete(p, rv, d)),
  };
}
