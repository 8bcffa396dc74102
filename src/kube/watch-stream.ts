import { StringDecoder } from 'node:string_decoder';
import { decodeWatchEvent, MAX_FRAME, PROTOBUF, ProtobufError } from './protobuf.js';

export type EventSink = (type: string, obj: unknown) => void;

/**
 * The body of a watch, fed chunk by chunk, as events: in the media type the server chose (it may answer
 * JSON to a client that asked protobuf first), whatever the chunks' boundaries. The function it answers
 * throws on a body it cannot read; the caller ends the watch.
 */
export function watchBodyReader(contentType: string | undefined, emit: EventSink): (chunk: Buffer) => void {
  return contentType?.startsWith(PROTOBUF) ? framesOf(emit) : linesOf(emit);
}

/** One JSON event a line (application/json watch). */
function linesOf(emit: EventSink): (chunk: Buffer) => void {
  const text = new StringDecoder('utf8');
  let rest = '';
  return (chunk) => {
    rest += text.write(chunk);
    for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      if (!line.trim()) continue;
      const e = JSON.parse(line) as { type: string; object: unknown };
      emit(e.type, e.object);
    }
  };
}

/**
 * Frames of a protobuf watch: a 4-byte big-endian length, then a WatchEvent (k8s.io/apimachinery
 * pkg/util/framer). Chunks are joined only once a whole frame is in, so a large object arriving in
 * many chunks is copied once, not once a chunk.
 */
function framesOf(emit: EventSink): (chunk: Buffer) => void {
  let chunks: Buffer[] = [];
  let have = 0;
  let need = 4;
  return (chunk) => {
    chunks.push(chunk);
    have += chunk.length;
    if (have < need) return;
    const all = chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, have);
    let at = 0;
    need = 4;
    while (all.length - at >= 4) {
      const len = all.readUInt32BE(at);
      if (len > MAX_FRAME) throw new ProtobufError(`a watch frame of ${len} bytes (at most ${MAX_FRAME})`);
      if (all.length - at - 4 < len) {
        need = 4 + len;
        break;
      }
      const e = decodeWatchEvent(all.subarray(at + 4, at + 4 + len));
      at += 4 + len;
      emit(e.type, e.object);
    }
    const left = all.subarray(at);
    chunks = left.length ? [left] : [];
    have = left.length;
  };
}
