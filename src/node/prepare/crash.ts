/**
 * Test-only crash points. With `FAKEGPU_CRASH_POINT=<name>` in its environment the plugin kills itself
 * with SIGKILL the first time it reaches that point, so tests and the chaos suite can stop it between
 * any two durable steps of a prepare or unprepare, and check that a restart finishes or undoes the work.
 * Nothing sets the variable outside tests.
 */
export const CRASH_POINTS = [
  /** The claim's intent is in the checkpoint; nothing made yet. */
  'prepare-started',
  /** A dynamic MIG GPU instance exists, without its compute instance. */
  'mig-gpu-instance',
  /** GPU and compute instance exist, not yet recorded in the checkpoint. */
  'mig-compute-instance',
  /** The instance's IDs and UUID are in the record in memory (its placement was on disk before); no files yet. */
  'mig-recorded',
  /** CDI spec and views written; the checkpoint still says PrepareStarted. */
  'files-written',
  /** The checkpoint says PrepareCompleted; the kubelet has not had the answer. */
  'prepare-completed',
  /** Unprepare destroyed the claim's MIG instances; its files and record remain. */
  'unprepare-undone',
  /** Unprepare removed the files; the record remains. */
  'unprepare-files-removed',
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export const CRASH_ENV = 'FAKEGPU_CRASH_POINT';

export function crashPoint(name: CrashPoint): void {
  if (process.env[CRASH_ENV] !== name) return;
  process.kill(process.pid, 'SIGKILL');
  // The signal is delivered on the way back to user space; never run another line of ours before it.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}
