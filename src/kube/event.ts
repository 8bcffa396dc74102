/** What an events.k8s.io Warning is about: the object `kubectl describe` shows it with. */
export interface Regarding {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

/** The API server refuses an event whose note is longer, in bytes (events.k8s.io/v1 `NoteLengthLimit`). */
export const NOTE_LIMIT_BYTES = 1024;

/** The note cut to what the API server takes, an ellipsis saying so: a long note must not lose the event. */
export function eventNote(note: string): string {
  if (Buffer.byteLength(note) <= NOTE_LIMIT_BYTES) return note;
  let out = '';
  let bytes = Buffer.byteLength('…');
  for (const ch of note) {
    const b = Buffer.byteLength(ch);
    if (bytes + b > NOTE_LIMIT_BYTES) break;
    out += ch;
    bytes += b;
  }
  return `${out}…`;
}

/**
 * An events.k8s.io/v1 Warning from one of fakegpu's components, named after the object and the time
 * (these names need no generateName), with the micro-second event time the API requires.
 */
export function warningEvent(o: {
  regarding: Regarding;
  reason: string;
  action: string;
  note: string;
  /** `fleet`, `plugin`: the reporting controller is fakegpu.dev/<component>. */
  component: string;
}): object {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: `${o.regarding.name}.${Date.now().toString(16)}` },
    regarding: o.regarding,
    reason: o.reason,
    action: o.action,
    note: eventNote(o.note),
    type: 'Warning',
    reportingController: `fakegpu.dev/${o.component}`,
    reportingInstance: `fakegpu-${o.component}`,
    eventTime: new Date().toISOString().replace('Z', '000Z'),
  };
}
