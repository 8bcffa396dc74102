import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { describe, it } from 'node:test';
import { NodeScorecard } from '../../src/node/plugin/scorecard.js';
import type { PreparedClaim } from '../../src/node/checkpoint/checkpoint.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { renderNode } from '../../src/model/render.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { scorecardGauges } from '../../src/process/scorecard-metrics.js';

const NODE = 'node-a';
const slices = renderNode(resolveProfile('dgx-h100'), {
  nodeName: NODE,
  dynamicMig: false,
  driverName: DRIVER_NAME,
  kubernetesVersion: { major: 1, minor: 37, patch: 0 },
  release: DEFAULT_RELEASE,
}).items;

function prepared(name: string, devices: string[], adminAccess = false): [string, PreparedClaim] {
  return [
    `uid-${name}`,
    {
      namespace: 'default',
      name,
      state: 'PrepareCompleted',
      devices: devices.map((d) => ({
        requestNames: ['gpu'],
        poolName: NODE,
        deviceName: d,
        cdiDeviceIds: [],
        uuid: '',
        type: 'gpu' as const,
        ...(adminAccess ? { adminAccess: true as const } : {}),
      })),
      configState: {},
    },
  ];
}

describe("the plugin's scorecard of its node", () => {
  it('counts the claims it prepared on the slices it published, admin access aside, as gauges', async () => {
    const claims = [
      prepared('one', ['gpu-0']),
      prepared('two', ['gpu-1', 'gpu-6']),
      prepared('admin', ['gpu-3'], true),
    ];
    const sc = new NodeScorecard(NODE, DRIVER_NAME, () => [{ driver: DRIVER_NAME, claims }]);
    assert.equal(sc.scorecard(), null, 'nothing before the first publish');
    sc.published(
      DRIVER_NAME,
      slices.filter((s) => s.spec.driver === DRIVER_NAME),
    );
    const c = sc.scorecard()?.cluster;
    assert.ok(c);
    assert.equal(c.gpus, 8);
    assert.equal(c.allocated, 3);
    assert.equal(c.nodesPartial, 1);
    assert.equal(c.strandedGpus, 5);
    assert.equal(c.multiGpuClaims, 1);
    const reg = new Registry();
    scorecardGauges(reg, () => sc.scorecard());
    assert.match(await reg.metrics(), /^fakegpu_scorecard_gpus_allocated\{scope="cluster",name=""\} 3$/m);
  });
});
