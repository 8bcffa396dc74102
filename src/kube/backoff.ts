/**
 * How long to wait before retry number `attempt` (1 for the first): AWS's "full jitter", a uniform draw
 * between 0 and min(cap, base·2^attempt). Without the draw, thousands of nodes failing together (an API
 * server restart) would all retry in the same instant, again and again.
 *
 * A pure function rather than a library (`exponential-backoff`, `p-retry`): those wrap a promise and
 * retry it, where the publisher, the fleet and the watch count failures across separate passes and arm
 * a timer of their own.
 */
export interface BackoffPolicy {
  /** The ceiling of the first retry's draw is twice this. */
  baseMs: number;
  capMs: number;
}

export function fullJitter(attempt: number, p: BackoffPolicy, random: () => number = Math.random): number {
  // 2^attempt past the cap is the cap; the exponent is bounded so it never reaches Infinity.
  const ceiling = Math.min(p.capMs, p.baseMs * 2 ** Math.min(Math.max(attempt, 0), 30));
  return Math.floor(random() * ceiling);
}

/** The node plugin's publisher: a few writes a node, so a slower start costs nothing. */
export const PUBLISH_BACKOFF: BackoffPolicy = { baseMs: 500, capMs: 30_000 };
/** One node of the fleet: thousands of these, spread by the draw. */
export const NODE_BACKOFF: BackoffPolicy = { baseMs: 250, capMs: 30_000 };
/** Re-opening a watch that failed (not one the server ended cleanly, which resumes at once). */
export const WATCH_BACKOFF: BackoffPolicy = { baseMs: 500, capMs: 30_000 };
/** A list page the API server could not serve yet: its watch cache catches up within seconds. */
export const LIST_BACKOFF: BackoffPolicy = { baseMs: 100, capMs: 5000 };
