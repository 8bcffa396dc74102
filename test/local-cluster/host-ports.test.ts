import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CD_CONTROLLER_HTTP } from '../../src/local-cluster/compute-domain-process.js';
import { FLEET_DCGM, FLEET_HTTP } from '../../src/local-cluster/fleet-process.js';
import { OWN_PORTS, withOwnPorts } from '../../src/local-cluster/host.js';
import { KARPENTER_HEALTH, KARPENTER_METRICS } from '../../src/local-cluster/karpenter-process.js';
import { KUEUE_HEALTH, KUEUE_METRICS, KUEUE_WEBHOOK } from '../../src/local-cluster/kueue-process.js';
import { PLUGIN_DCGM, PLUGIN_HTTP } from '../../src/local-cluster/plugin-process.js';

const inRanges = (port: number): boolean =>
  OWN_PORTS.split(',').some((r) => {
    const [lo, hi] = r.split('-').map(Number);
    return lo !== undefined && port >= lo && port <= (hi ?? lo);
  });

describe("the cluster's own ports, reserved from the kernel's ephemeral range", () => {
  it('cover every fixed port a fakegpu, Karpenter or Kueue process listens on', () => {
    const ports = [
      ...[PLUGIN_HTTP, PLUGIN_DCGM, FLEET_HTTP, FLEET_DCGM, CD_CONTROLLER_HTTP].map((a) =>
        Number(a.split(':')[1]),
      ),
      KARPENTER_METRICS,
      KARPENTER_HEALTH,
      KUEUE_WEBHOOK,
      KUEUE_HEALTH,
      KUEUE_METRICS,
      51527, // the fleet chaos's second replica
    ];
    for (const p of ports) assert.ok(inRanges(p), `port ${String(p)} is reserved`);
  });

  it("are added to the sysctl's list, once, keeping what was there", () => {
    assert.equal(withOwnPorts('\n'), OWN_PORTS);
    assert.equal(withOwnPorts('8080,30000-30010\n'), `8080,30000-30010,${OWN_PORTS}`);
    assert.equal(withOwnPorts(withOwnPorts('8080')), `8080,${OWN_PORTS}`);
  });
});
