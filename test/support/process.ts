import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { ShutdownHost, StopSignal } from '../../src/process/shutdown.js';

/** Signals sent by hand, and exits recorded instead of taken. */
export class FakeHost extends EventEmitter implements ShutdownHost {
  exits: (number | undefined)[] = [];
  override once(signal: StopSignal, listener: () => void): this {
    return super.once(signal, listener);
  }
  override off(signal: StopSignal, listener: () => void): this {
    return super.off(signal, listener);
  }
  exit(code?: number): void {
    this.exits.push(code);
  }
}

/** One request to a probe server on loopback: its status, body and content type. */
export async function probe(
  port: number,
  path: string,
): Promise<{ status: number; text: string; type: string | null }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: r.status, text: await r.text(), type: r.headers.get('content-type') };
}

/** A loopback port this test holds, so that a process told to listen there finds it in use. */
export async function takenEndpoint(): Promise<{ endpoint: string; close(): Promise<void> }> {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  const address = taken.address();
  assert.ok(address && typeof address === 'object');
  return {
    endpoint: `127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((r) => {
        taken.close(() => {
          r();
        });
      }),
  };
}

/**
 * A kubeconfig file a process loads but never uses (its API server is faked, or it stops before asking
 * one); `cluster` adds fields to the cluster entry, e.g. `proxy-url`.
 */
export function unusedKubeconfig(dir: string, cluster = ''): string {
  const p = join(dir, `kubeconfig-${randomUUID()}`);
  writeFileSync(
    p,
    `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"${cluster}}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
  );
  return p;
}
