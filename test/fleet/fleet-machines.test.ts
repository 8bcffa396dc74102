import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Machines, type NodeMachine } from '../../src/fleet/machines.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';

const machines = (): Machines =>
  new Machines({
    profileLabel: 'fakegpu.dev/profile',
    dynamicMig: true,
    driverName: 'gpu.nvidia.com',
    release: DEFAULT_RELEASE,
    log: pino({ level: 'silent' }),
  });

const node = (profile: string): NodeMachine => ({ profile, pool: null });
const migDevices = (m: Machines, st: NodeMachine): number =>
  (m.devicesOf(st) ?? []).flatMap((s) => s.devices).filter((d) => d.name.includes('-mig-')).length;

/** The devices the scorecard reads of each node: one answer per machine, asked for every node each time. */
describe("fleet: a node's devices for the scorecard", () => {
  it('answers every node of one profile with the same devices, and anew once the server keeps less', () => {
    const m = machines();
    const a = m.devicesOf(node('dgx-h100'));
    assert.ok(a && a.length > 0);
    assert.equal(m.devicesOf(node('dgx-h100')), a, 'the same answer for another node of the machine');
    assert.notEqual(m.devicesOf(node('dgx-a100')), a);
    assert.ok(migDevices(m, node('dgx-h100')) > 0, 'dynamic MIG publishes MIG devices');
    // A server that drops shared counters: dynamic MIG degrades to whole GPUs, for nodes asked before too.
    m.gatesOff = new Set(['sharedCounters']);
    assert.equal(migDevices(m, node('dgx-h100')), 0);
    assert.equal(m.devicesOf(node('no-such-profile')), null);
  });
});
