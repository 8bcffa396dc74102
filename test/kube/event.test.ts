import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventNote, NOTE_LIMIT_BYTES, warningEvent } from '../../src/kube/event.js';
import { FakegpuError } from '../../src/errors.js';
import { resolveProfile } from '../../src/process/profile-file.js';

/** Events the API server takes: a note over its 1,024 bytes lost the whole event (HTTP 422). */

describe('warning events', () => {
  it("cut a note past the API server's limit, in bytes, with an ellipsis; a short one stays as it is", () => {
    assert.equal(eventNote('short'), 'short');
    const exact = 'x'.repeat(NOTE_LIMIT_BYTES);
    assert.equal(eventNote(exact), exact);
    const long = eventNote('y'.repeat(3000));
    assert.ok(long.endsWith('…'));
    assert.equal(Buffer.byteLength(long), NOTE_LIMIT_BYTES);
    const wide = eventNote('é'.repeat(600));
    assert.ok(Buffer.byteLength(wide) <= NOTE_LIMIT_BYTES, String(Buffer.byteLength(wide)));
    assert.ok(wide.startsWith('éé') && wide.endsWith('…'));
  });

  it("keep the event of an unknown preset, whose message lists every preset (the fleet's lost it)", () => {
    let message = '';
    try {
      resolveProfile('dgx-h999');
    } catch (e) {
      assert.ok(e instanceof FakegpuError);
      message = e.message;
    }
    assert.ok(Buffer.byteLength(message) > NOTE_LIMIT_BYTES, 'the message this guards against is long');
    const ev = warningEvent({
      regarding: { apiVersion: 'v1', kind: 'Node', name: 'kwok-gpu-2' },
      reason: 'FakegpuProfileInvalid',
      action: 'Publish',
      note: message,
      component: 'fleet',
    }) as { note: string };
    assert.ok(Buffer.byteLength(ev.note) <= NOTE_LIMIT_BYTES);
    assert.ok(ev.note.includes('dgx-h999'));
  });
});
