/**
 * The API server's protobuf encoding, read as far as a watcher of metadata needs it: a watch event's
 * type, and of its object only `metadata` (or, for an ERROR, the Status). Asked in protobuf, a watch of a
 * built-in kind shares the bytes the API server already encoded for kube-scheduler and the controller
 * manager (they watch in protobuf); asked in JSON, or as PartialObjectMetadata, every event is copied
 * and encoded once more for this watcher alone (k8s.io/apiserver v0.37.2,
 * pkg/storage/cacher/caching_object.go:136-166). Field numbers are those of k8s.io/apimachinery's
 * generated.proto (meta/v1 and runtime); the spec of an object is skipped unread.
 */

export const PROTOBUF = 'application/vnd.kubernetes.protobuf';
/** The envelope of every object the API server encodes in protobuf (runtime.Unknown behind it). */
const MAGIC = Buffer.from('k8s\0', 'latin1');
/** A frame longer than this is taken for a corrupt stream, not allocated: etcd stores 1.5 MiB at most. */
export const MAX_FRAME = 16 * 1024 * 1024;

const VARINT = 0;
const FIXED64 = 1;
const BYTES = 2;
const FIXED32 = 5;

export class ProtobufError extends Error {
  override name = 'ProtobufError';
}

/** A cursor over one message: fields by number and wire type, any not asked for skipped. */
export class ProtoReader {
  private pos: number;

  constructor(
    private readonly buf: Buffer,
    start = 0,
    private readonly end = buf.length,
  ) {
    this.pos = start;
  }

  /** The next field's number and wire type; null at the end of the message. */
  next(): { no: number; wire: number } | null {
    if (this.pos >= this.end) return null;
    const tag = this.varint();
    return { no: Math.floor(tag / 8), wire: tag % 8 };
  }

  /** Up to 2^53: tags, lengths, int32 and bool (a negative int32 is sign-extended to ten bytes). */
  varint(): number {
    let value = 0;
    for (let shift = 0, scale = 1; shift < 70; shift += 7, scale *= 128) {
      if (this.pos >= this.end) throw new ProtobufError('a varint runs past the end of its message');
      const b = this.buf[this.pos++] ?? 0;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
    }
    throw new ProtobufError('a varint longer than ten bytes');
  }

  /** An int32 field: negative values come as ten-byte varints of their two's complement. */
  int32(): number {
    return this.varint() | 0;
  }

  /** A length-delimited field's bounds, the cursor moved past it. */
  span(): [number, number] {
    const len = this.varint();
    const start = this.pos;
    if (start + len > this.end) throw new ProtobufError(`a field of ${len} bytes runs past its message`);
    this.pos = start + len;
    return [start, start + len];
  }

  string(): string {
    const [s, e] = this.span();
    return this.buf.toString('utf8', s, e);
  }

  /** A reader of the embedded message that is the next field. */
  message(): ProtoReader {
    const [s, e] = this.span();
    return new ProtoReader(this.buf, s, e);
  }

  bytes(): Buffer {
    const [s, e] = this.span();
    return this.buf.subarray(s, e);
  }

  skip(wire: number): void {
    if (wire === VARINT) this.varint();
    else if (wire === BYTES) this.span();
    else if (wire === FIXED64 || wire === FIXED32) {
      this.pos += wire === FIXED64 ? 8 : 4;
      if (this.pos > this.end) throw new ProtobufError('a fixed-size field runs past its message');
    } else throw new ProtobufError(`wire type ${wire} is not one the API server writes`);
  }
}

/** Each field of a message in turn; `on` answers false for a field it did not read, which is skipped. */
function fields(r: ProtoReader, on: (no: number, wire: number) => boolean): void {
  for (let f = r.next(); f; f = r.next()) if (f.wire !== BYTES || !on(f.no, f.wire)) r.skip(f.wire);
}

/** Field 1 of a map entry is its key, field 2 its value (meta/v1 labels and annotations). */
function mapEntry(r: ProtoReader, into: Record<string, string>): void {
  let key = '';
  let value = '';
  fields(r, (no) => {
    if (no === 1) key = r.string();
    else if (no === 2) value = r.string();
    else return false;
    return true;
  });
  into[key] = value;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid?: string;
  controller?: boolean;
}

/** meta/v1 OwnerReference: kind 1, name 3, uid 4, apiVersion 5, controller 6 (a varint). */
function ownerReference(r: ProtoReader): OwnerReference {
  const o: OwnerReference = { apiVersion: '', kind: '', name: '' };
  for (let f = r.next(); f; f = r.next()) {
    if (f.no === 6 && f.wire === VARINT) o.controller = r.varint() !== 0;
    else if (f.wire !== BYTES) r.skip(f.wire);
    else if (f.no === 1) o.kind = r.string();
    else if (f.no === 3) o.name = r.string();
    else if (f.no === 4) o.uid = r.string();
    else if (f.no === 5) o.apiVersion = r.string();
    else r.skip(f.wire);
  }
  return o;
}

/** meta/v1 Time: seconds 1 (nanoseconds are not written). */
function time(r: ProtoReader): string {
  let seconds = 0;
  for (let f = r.next(); f; f = r.next())
    if (f.no === 1 && f.wire === VARINT) seconds = r.varint();
    else r.skip(f.wire);
  return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}

/** The shape of `metadata` in JSON, as far as it is read. */
export interface DecodedMeta {
  name?: string;
  uid?: string;
  resourceVersion?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

/** meta/v1 ObjectMeta, the parts a watcher of metadata reads (managedFields, 17, is skipped). */
export function objectMeta(r: ProtoReader): DecodedMeta {
  const m: DecodedMeta = {};
  fields(r, (no) => {
    switch (no) {
      case 1:
        m.name = r.string();
        return true;
      case 5:
        m.uid = r.string();
        return true;
      case 6:
        m.resourceVersion = r.string();
        return true;
      case 9:
        m.deletionTimestamp = time(r.message());
        return true;
      case 11:
        mapEntry(r.message(), (m.labels ??= {}));
        return true;
      case 12:
        mapEntry(r.message(), (m.annotations ??= {}));
        return true;
      case 13:
        (m.ownerReferences ??= []).push(ownerReference(r.message()));
        return true;
      default:
        return false;
    }
  });
  return m;
}

/** meta/v1 Status: message 3, reason 4, code 6; what a client shows of a refusal. */
export interface DecodedStatus {
  kind: 'Status';
  code: number;
  reason: string;
  message: string;
}

function status(r: ProtoReader): DecodedStatus {
  const s: DecodedStatus = { kind: 'Status', code: 0, reason: '', message: '' };
  for (let f = r.next(); f; f = r.next()) {
    if (f.no === 6 && f.wire === VARINT) s.code = r.int32();
    else if (f.no === 3 && f.wire === BYTES) s.message = r.string();
    else if (f.no === 4 && f.wire === BYTES) s.reason = r.string();
    else r.skip(f.wire);
  }
  return s;
}

/**
 * An object as the API server encodes it: `k8s\0`, then runtime.Unknown (typeMeta 1 with kind 2, raw 2,
 * contentEncoding 3). A Status is read whole; any other kind as its metadata (field 1 of every kind).
 */
export function decodeObject(buf: Buffer): { metadata: DecodedMeta } | DecodedStatus {
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC))
    throw new ProtobufError('an object without the k8s protobuf envelope');
  const r = new ProtoReader(buf, MAGIC.length);
  let kind = '';
  let raw: ProtoReader | null = null;
  fields(r, (no) => {
    if (no === 1) {
      const typeMeta = r.message();
      fields(typeMeta, (tm) => {
        if (tm !== 2) return false;
        kind = typeMeta.string();
        return true;
      });
    } else if (no === 2) raw = r.message();
    else if (no === 3) {
      const encoding = r.string();
      if (encoding) throw new ProtobufError(`an object in content encoding ${encoding}`);
    } else return false;
    return true;
  });
  // TypeScript does not follow the assignment inside the callback.
  const body = raw as ProtoReader | null;
  if (!body) throw new ProtobufError(`a ${kind || 'object'} without its raw bytes`);
  if (kind === 'Status') return status(body);
  let metadata: DecodedMeta = {};
  fields(body, (no) => {
    if (no !== 1) return false;
    metadata = objectMeta(body.message());
    return true;
  });
  return { metadata };
}

/** meta/v1 WatchEvent, as one frame of a protobuf watch carries it: type 1, object 2 (RawExtension, raw 1). */
export function decodeWatchEvent(frame: Buffer): {
  type: string;
  object: ReturnType<typeof decodeObject> | null;
} {
  const r = new ProtoReader(frame);
  let type = '';
  let raw: Buffer | null = null;
  fields(r, (no) => {
    if (no === 1) type = r.string();
    else if (no === 2) {
      const ext = r.message();
      fields(ext, (e) => {
        if (e !== 1) return false;
        raw = ext.bytes();
        return true;
      });
    } else return false;
    return true;
  });
  if (!type) throw new ProtobufError('a watch event without its type');
  const object = raw as Buffer | null;
  return { type, object: object ? decodeObject(object) : null };
}
