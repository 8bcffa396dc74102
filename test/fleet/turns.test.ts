import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { naturalCompare, sortInTurns, Turns } from '../../src/fleet/turns.js';

describe('work in turns of the event loop', () => {
  it('sorts in natural order (numbers by value), stably, letting the loop run meanwhile', async () => {
    const names = Array.from({ length: 5000 }, (_, i) => ({ name: `kwok-gpu-${i}`, rack: `rack-${i % 7}` }));
    // Shuffled, as a fleet's nodes come in API-list order (-0, -1, -10, -100, …).
    const shuffled = [...names].sort((a, b) => (a.name < b.name ? -1 : 1));
    let ticks = 0;
    const tick = setInterval(() => ticks++, 0);
    const got = await sortInTurns(shuffled, (a, b) => naturalCompare(a.rack, b.rack), new Turns(0));
    clearInterval(tick);
    const want = [...shuffled].sort(
      (a, b) => Number(a.rack.slice(5)) - Number(b.rack.slice(5)), // Array.prototype.sort is stable too
    );
    assert.deepEqual(got, want);
    assert.ok(ticks > 0, 'a timer ran while it sorted');
  });

  it('orders kwok-gpu-9 before kwok-gpu-10 and leading zeros by value', () => {
    const names = ['kwok-gpu-10', 'kwok-gpu-9', 'kwok-gpu-010', 'a', 'kwok-gpu-1'];
    assert.deepEqual([...names].sort(naturalCompare), [
      'a',
      'kwok-gpu-1',
      'kwok-gpu-9',
      'kwok-gpu-10',
      'kwok-gpu-010',
    ]);
  });
});
