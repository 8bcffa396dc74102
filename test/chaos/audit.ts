import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/**
 * The API server's own record of the ResourceSlice writes it applied (`cluster up` with `auditSlices`):
 * what it received, from which process, for which node. A replica's log says what it meant to do; this
 * says what reached the server, late writes of a killed or fenced process included.
 */

export interface AuditedWrite {
  /** When the API server received the request (epoch ms). */
  at: number;
  /** The sending process, from its user agent (`fakegpu/pid-<pid>`); null: not a fakegpu process. */
  pid: number | null;
  node: string;
  verb: string;
}

interface AuditEvent {
  stage?: string;
  requestURI?: string;
  verb?: string;
  userAgent?: string;
  requestReceivedTimestamp?: string;
  responseStatus?: { code?: number };
  requestObject?: { spec?: { nodeName?: string } };
  responseObject?: { spec?: { nodeName?: string } };
}

/** One audit event line as a write the server applied; null for anything else. */
export function auditedWrite(line: string): AuditedWrite | null {
  let e: AuditEvent;
  try {
    e = JSON.parse(line) as AuditEvent;
  } catch {
    return null;
  }
  const code = e.responseStatus?.code ?? 0;
  if (e.stage !== 'ResponseComplete' || code < 200 || code >= 300) return null;
  // A dry run (the fleet's probe of which fields the server keeps) is checked, never stored.
  if (/[?&]dryRun=/.test(e.requestURI ?? '')) return null;
  // A delete's request is DeleteOptions; the slice it removed is in the response.
  const node = e.requestObject?.spec?.nodeName ?? e.responseObject?.spec?.nodeName;
  const at = Date.parse(e.requestReceivedTimestamp ?? '');
  if (!node || !Number.isFinite(at)) return null;
  const pid = /^fakegpu\/pid-(\d+)/.exec(e.userAgent ?? '')?.[1];
  return { at, pid: pid === undefined ? null : Number(pid), node, verb: e.verb ?? '' };
}

/** The audit log read as it grows: each call returns the writes appended since the last. */
export class AuditLog {
  private offset = 0;
  private partial = '';
  /** A character split between two reads stays whole. */
  private readonly decoder = new StringDecoder('utf8');

  constructor(private readonly path: string) {}

  next(): AuditedWrite[] {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch {
      return [];
    }
    try {
      const size = fstatSync(fd).size;
      const out: AuditedWrite[] = [];
      const buf = Buffer.alloc(1 << 20);
      while (this.offset < size) {
        const n = readSync(fd, buf, 0, Math.min(buf.length, size - this.offset), this.offset);
        if (n <= 0) break;
        this.offset += n;
        const lines = (this.partial + this.decoder.write(buf.subarray(0, n))).split('\n');
        this.partial = lines.pop() ?? '';
        for (const l of lines) {
          const w = auditedWrite(l);
          if (w) out.push(w);
        }
      }
      return out;
    } finally {
      closeSync(fd);
    }
  }
}
