import { EventEmitter } from 'node:events';
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
