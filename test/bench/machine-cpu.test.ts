import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cpuBetween, loopThreadTimes, sampleCpu, statSeconds } from '../../bench/machine-cpu.js';

describe("a bench phase's CPU by process, from /proc", () => {
  it('reads utime and stime past a comm with spaces and parentheses', () => {
    const line = '4242 (kube (odd) name) S 1 4242 4242 0 -1 4194560 123 0 0 0 250 150 0 0 20 0 12 0 99 0 0';
    assert.equal(statSeconds(line), 4);
  });

  it('gives cores per group between two samples, the busiest first, none below half a percent', () => {
    const a = {
      at: 0,
      machineBusy: 100,
      byGroup: new Map([
        ['etcd', 10],
        ['kube-apiserver', 50],
        ['other', 1],
      ]),
    };
    const b = {
      at: 10_000,
      machineBusy: 118,
      byGroup: new Map([
        ['etcd', 12],
        ['kube-apiserver', 62],
        ['other', 1.01],
        ['fakegpu fleet', 3],
      ]),
    };
    const d = cpuBetween(a, b);
    assert.deepEqual(Object.entries(d.cores), [
      ['kube-apiserver', 1.2],
      ['fakegpu fleet', 0.3],
      ['etcd', 0.2],
    ]);
    assert.equal(d.machineBusyCores, 1.8);
  });

  it('counts this process as the bench, and sees the CPU it burns', () => {
    const a = sampleCpu();
    const until = performance.now() + 300;
    let x = 0;
    while (performance.now() < until) x += Math.sqrt(x + 1);
    const d = cpuBetween(a, sampleCpu());
    assert.ok(x > 0);
    assert.ok((d.cores['bench'] ?? 0) > 0.3, JSON.stringify(d.cores));
  });
});

describe("a process's event-loop thread, from the kernel's schedstat", () => {
  it('counts the time the thread ran: a 60 ms spin adds at least 50 ms', () => {
    const before = loopThreadTimes(process.pid);
    assert.ok(before, 'this Linux machine has /proc/<pid>/task/<pid>/schedstat');
    const until = performance.now() + 60;
    while (performance.now() < until);
    const after = loopThreadTimes(process.pid);
    assert.ok(after);
    assert.ok(after.ranMs - before.ranMs >= 50, `ran ${after.ranMs - before.ranMs} ms`);
    assert.ok(after.waitedMs >= before.waitedMs);
  });

  it('is null for a process that is not there', () => {
    assert.equal(loopThreadTimes(2 ** 22 + 1), null);
  });
});
