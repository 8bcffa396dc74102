import type { Logger } from 'pino';

/** A started process, as its run module hands it back. */
export interface Running {
  stop(): Promise<void>;
}

/** The signals every process stops on: Kubernetes' SIGTERM, a terminal's SIGINT and SIGHUP. */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** How long a stop may take before the process exits anyway: below `cluster down`'s 10 s before SIGKILL. */
export const STOP_BOUND_MS = 8_000;

/** After the stop, left to the process to exit by itself before it is made to (keep-alive sockets of aborted watches hold it). */
const EXIT_GRACE_MS = 200;

/** What the shutdown listens on and exits through; the process by default, a fake in tests. */
export interface ShutdownHost {
  once(signal: StopSignal, listener: () => void): unknown;
  off(signal: StopSignal, listener: () => void): unknown;
  /** Exits with the process's exit code, or `code` when given. */
  exit(code?: number): void;
  /** Calls `listener` for every promise rejected with no handler. */
  onUnhandledRejection?(listener: (reason: unknown) => void): void;
}

const processHost: ShutdownHost = {
  once: (s, l) => process.once(s, l),
  off: (s, l) => process.off(s, l),
  exit: (code) => process.exit(code),
  onUnhandledRejection: (l) => {
    process.on('unhandledRejection', l);
  },
};

/**
 * Makes the process exit shortly, with the exit code the CLI sets meanwhile, if nothing else has ended it:
 * after a stop, or after a start that failed half-way, something (a watch's socket) may still hold it.
 */
export function exitSoon(host: ShutdownHost = processHost, ms = EXIT_GRACE_MS): void {
  setTimeout(() => {
    host.exit();
  }, ms).unref();
}

/** Resolves with the first stop signal; a second one, with no listener left, ends the process at once. */
export function nextStopSignal(host: ShutdownHost = processHost): Promise<StopSignal> {
  return new Promise((resolve) => {
    const listeners = STOP_SIGNALS.map((s) => {
      const l = (): void => {
        for (const [i, other] of STOP_SIGNALS.entries()) host.off(other, listeners[i] ?? l);
        resolve(s);
      };
      host.once(s, l);
      return l;
    });
  });
}

/** Whether `stop` finished within `boundMs`; a stop that throws is logged and counts as finished. */
export async function boundedStop(stop: () => Promise<void>, log: Logger, boundMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => {
      resolve(false);
    }, boundMs);
  });
  const done = stop().then(
    () => true as const,
    (e: unknown) => {
      log.error({ err: e instanceof Error ? e.message : String(e) }, 'stopping failed');
      return true as const;
    },
  );
  try {
    return await Promise.race([done, late]);
  } finally {
    clearTimeout(timer);
  }
}

export interface RunOptions {
  log: Logger;
  boundMs?: number;
  host?: ShutdownHost;
}

/**
 * The first promise rejected with no handler, as a promise; each one is logged in one line. Node's own
 * answer would be a stack trace and an exit with no stop: claims half-written, sockets left behind.
 */
function firstUnhandledRejection(host: ShutdownHost, log: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    // Kept to the end: without a listener, Node's default would end a stopping process mid-stop.
    host.onUnhandledRejection?.((reason) => {
      log.error({ err: reason instanceof Error ? reason.message : String(reason) }, 'unhandled rejection');
      resolve();
    });
  });
}

/**
 * Every long-running process the same way: start it; on SIGTERM, SIGINT or SIGHUP log `stopping` with the
 * signal and stop it, within `boundMs` (past it: a log line and exit status 1); then leave. A start that
 * throws is rethrown (the CLI prints its one line) and the process exits soon after, whatever it left. A
 * promise rejected with no handler (a bug: every known source handles its own) is logged in one line and
 * stops the process the same way, with exit status 1.
 */
export async function runUntilStopped(start: () => Promise<Running>, o: RunOptions): Promise<void> {
  const host = o.host ?? processHost;
  const fatal = firstUnhandledRejection(host, o.log);
  let running: Running;
  try {
    running = await start();
  } catch (e) {
    exitSoon(host);
    throw e;
  }
  const signal = await Promise.race([nextStopSignal(host), fatal.then(() => null)]);
  if (signal) o.log.info({ signal }, 'stopping');
  else o.log.error('stopping after an unhandled rejection');
  const boundMs = o.boundMs ?? STOP_BOUND_MS;
  if (await boundedStop(() => running.stop(), o.log, boundMs)) {
    if (signal) exitSoon(host);
    else host.exit(1);
    return;
  }
  o.log.error({ boundMs }, 'did not stop in time; exiting');
  host.exit(1);
}
