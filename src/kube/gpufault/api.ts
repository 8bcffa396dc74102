import { FakegpuError } from '../../errors.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { listPage, type ListQuery, type Page } from '../api.js';
import { ApiClient, ApiError, clientOf, type WatchSource, type WrittenRef } from '../client.js';
import { GPUFAULTS_PATH, type NewGpuFault } from '../../model/fault/resource.js';
import type { StatusPatch } from '../../model/fault/status.js';
import type { BackoffPolicy } from '../backoff.js';

/**
 * What the plugin, the fleet and the CLI ask of the API server about GpuFaults, as one interface: the
 * real one over `ApiClient`, and in tests a fake. Objects come back unparsed: `parseGpuFault` decides
 * what is a fault. Watches go by `GPUFAULTS_PATH`, so `ResumableWatch` drives them.
 */
export interface FaultApi extends WatchSource {
  /** Rejects with `ApiError` 404 when the CRD is not installed. */
  listFaults(q: ListQuery): Promise<Page<unknown>>;
  readFault(name: string): Promise<unknown>;
  /** Answers the name, which the API server chose for a `generateName`. */
  createFault(f: NewGpuFault): Promise<WrittenRef>;
  /** Rejects with `ApiError` 404 when the fault is already gone. */
  deleteFault(name: string): Promise<void>;
  /** A JSON merge patch of the status subresource (`status.ts` builds them). */
  patchFaultStatus(name: string, patch: StatusPatch): Promise<void>;
}

export const MERGE_PATCH = 'application/merge-patch+json';

/**
 * Retrying a status patch the API server rejected. A status is not urgent, and one it refuses (too
 * large, against the CRD) is likely refused again: a minute between tries at most.
 */
export const STATUS_BACKOFF: BackoffPolicy = { baseMs: 1000, capMs: 60_000 };

function path(name: string): string {
  return `${GPUFAULTS_PATH}/${encodeURIComponent(name)}`;
}

export class KubeFaultApi implements FaultApi {
  private readonly http: ApiClient;

  constructor(kc: KubeConfig | ApiClient) {
    this.http = kc instanceof ApiClient ? kc : clientOf(kc);
  }

  listFaults(q: ListQuery): Promise<Page<unknown>> {
    return listPage<unknown>(this.http, GPUFAULTS_PATH, q, 'application/json');
  }

  async readFault(name: string): Promise<unknown> {
    return JSON.parse(await this.http.send('GET', path(name))) as unknown;
  }

  createFault(f: NewGpuFault): Promise<WrittenRef> {
    return this.http.write('POST', GPUFAULTS_PATH, JSON.stringify(f));
  }

  async deleteFault(name: string): Promise<void> {
    await this.http.send('DELETE', path(name));
  }

  async patchFaultStatus(name: string, patch: StatusPatch): Promise<void> {
    await this.http.send(
      'PATCH',
      `${path(name)}/status`,
      JSON.stringify(patch),
      'application/json',
      MERGE_PATCH,
    );
  }

  watch(...a: Parameters<WatchSource['watch']>): ReturnType<WatchSource['watch']> {
    return this.http.watch(...a);
  }
}

/**
 * An API failure as one line: the API server's own message (a Status' `message`, e.g. the CRD rule
 * a fault broke) where it sent one, else the client's.
 */
export function apiFailure(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  if (e instanceof ApiError) {
    // The body is cut at 500 bytes, so the JSON may be cut too; the message is near its start.
    const m = /"message":"((?:[^"\\]|\\.)*)/.exec(e.message);
    if (m?.[1] !== undefined) {
      let text = m[1];
      try {
        text = JSON.parse(`"${text.replace(/\\$/, '')}"`) as string;
      } catch {
        // A cut escape sequence: the raw text still reads.
      }
      return `HTTP ${e.code}: ${text.split('\n', 1)[0] ?? ''}`;
    }
  }
  return e.message.split('\n', 1)[0] ?? '';
}

/** `run`, with an API failure turned into the one line the CLI prints: `<field>: <what>: <failure>`. */
export async function askingApi<T>(field: string, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    throw new FakegpuError(field, `${what}: ${apiFailure(e)}`);
  }
}
