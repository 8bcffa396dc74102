import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DeviceNode } from '../cdi/spec.js';

/**
 * What every driver's prepare on this node shares: fake device nodes on one harmless major, and one
 * call at a time, as the real drivers' locks give.
 */

/** Character major for fake device nodes: LANANA's range for local/experimental use, never a real driver's. */
export const FAKE_MAJOR = 120;

/** A failure the kubelet sees as the claim's error string, whole. */
export class PrepareError extends Error {}

/** Why one claim cannot be prepared; the lifecycle adds the claim and the driver's own prefix. */
export class ClaimError extends Error {}

/** A claim refused before any device is prepared: NVIDIA's message has no "prepare devices failed" in it. */
export class ClaimRefused extends ClaimError {}

/** A CDI device node on the fake major; CDI carries type, major and minor, so no host node is needed. */
export function fakeDeviceNode(path: string, minor: number): DeviceNode {
  return { path, type: 'c', major: FAKE_MAJOR, minor, permissions: 'rw' };
}

/**
 * Harmless stand-ins on the host, under a state dir: opening one reaches no driver. Where mknod is not
 * allowed the nodes are simply absent.
 */
export function makeFakeNodes(dir: string, nodes: readonly (readonly [name: string, minor: number])[]): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, minor] of nodes) {
    if (!existsSync(join(dir, name)))
      spawnSync('mknod', ['-m', '0666', join(dir, name), 'c', String(FAKE_MAJOR), String(minor)]);
  }
}

/** Runs calls one after another, each whether or not the previous one failed. */
export class Serial {
  private queue: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => T): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }
}
