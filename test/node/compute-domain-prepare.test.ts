import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  channelDeviceNodes,
  prepareChannel,
  type ChannelPrepareInput,
} from '../../src/node/compute-domain/prepare.js';

const claim = {
  uid: 'c-1',
  namespace: 'team',
  name: 'job-channel',
  domainID: 'cd-1',
  allocationMode: 'Single',
};
const ok: ChannelPrepareInput = {
  claim,
  channelHeldBy: null,
  domain: { uid: 'cd-1', namespace: 'team' },
  nodeLabel: null,
  nodeReady: true,
  clique: '5e7f1c1a-0000-4000-8000-000000000001.388',
};
const prefix = "error preparing devices for claim 'team/job-channel:c-1': prepare devices failed: ";

/** The channel prepare's checks in NVIDIA's order, each with its message (compute-domains.md §3). */
describe('preparing an IMEX channel claim', () => {
  it('hands out channel 0 and labels the node; All gives every channel', () => {
    assert.deepEqual(prepareChannel(ok), {
      ok: true,
      labelNode: true,
      deviceNodes: ['/dev/nvidia-caps-imex-channels/channel0'],
    });
    const all = channelDeviceNodes('All');
    assert.equal(all.length, 2048);
    assert.equal(all[2047], '/dev/nvidia-caps-imex-channels/channel2047');
    assert.deepEqual(prepareChannel({ ...ok, nodeLabel: 'cd-1' }), {
      ...prepareChannel(ok),
      labelNode: false,
    });
    assert.deepEqual(prepareChannel({ ...ok, clique: null }), { ok: true, labelNode: true, deviceNodes: [] });
  });

  it('refuses in order: checkpoint, domain, namespace, label, readiness; only waiting ones are retried', () => {
    const cases: [Partial<ChannelPrepareInput>, string, boolean][] = [
      [
        { channelHeldBy: 'c-0', domain: null },
        'channel 0 already allocated by claim c-0 (according to checkpoint)',
        false,
      ],
      [{ domain: null, nodeLabel: 'cd-9' }, 'ComputeDomain not found: cd-1', true],
      [
        { domain: { uid: 'cd-1', namespace: 'other' }, nodeLabel: 'cd-9' },
        "the ResourceClaim's namespace is different than the ComputeDomain's namespace",
        false,
      ],
      [{ nodeLabel: 'cd-9', nodeReady: false }, 'label already exists for a different ComputeDomain', true],
      [
        { nodeReady: false },
        'error applying config: error asserting ComputeDomain Ready: current node not ready in ComputeDomain',
        true,
      ],
    ];
    for (const [change, why, retry] of cases)
      assert.deepEqual(prepareChannel({ ...ok, ...change }), { ok: false, retry, message: prefix + why });
    assert.equal(prepareChannel({ ...ok, channelHeldBy: 'c-1' }).ok, true, 'its own claim again is fine');
  });
});
