import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judgeNominations } from '../../bench/nominations.js';

describe("Karpenter's nominations against where the scheduler ran the pods", () => {
  const ev = (pod: string, reason: string, message: string, at: string) => ({
    reason,
    message,
    source: { component: 'karpenter' },
    involvedObject: { name: pod },
    lastTimestamp: at,
  });

  it('counts a nominated pod the scheduler has not run; one run on another node is a choice, not a mismatch', () => {
    const r = judgeNominations(
      [
        ev('a', 'Nominated', 'Pod should schedule on: nodeclaim/gpu-x', '2026-12-03T10:00:00Z'),
        ev('a', 'Nominated', 'Pod should schedule on: nodeclaim/gpu-x, node/n1', '2026-12-03T10:00:05Z'),
        ev('b', 'Nominated', 'Pod should schedule on: nodeclaim/gpu-y', '2026-12-03T10:00:00Z'),
        ev('c', 'Nominated', 'Pod should schedule on: node/n3', '2026-12-03T10:00:00Z'),
        { ...ev('d', 'Nominated', 'Pod should schedule on: node/n9', '2026-12-03T10:00:00Z'), source: {} },
      ],
      new Map([['gpu-y', 'n2']]),
      new Map([
        ['a', 'n1'],
        ['b', ''],
        ['c', 'n4'],
        ['d', 'n5'],
      ]),
    );
    assert.equal(r.nominated, 3);
    assert.deepEqual(r.mismatches, ['b: Karpenter n2, the scheduler none']);
    assert.equal(r.elsewhere, 1, 'c ran on n4, not n3');
  });

  it('counts a pod Karpenter found no room for that the scheduler placed', () => {
    const r = judgeNominations(
      [ev('e', 'FailedScheduling', 'no instance type can satisfy the allocation', '2026-12-03T10:00:00Z')],
      new Map(),
      new Map([['e', 'n1']]),
    );
    assert.deepEqual(r.mismatches, [
      'e: Karpenter found no room (no instance type can satisfy the allocation), the scheduler n1',
    ]);
  });
});
