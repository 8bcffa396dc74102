import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { computeDomainSlices, COMPUTE_DOMAIN_DRIVER } from '../../src/model/compute-domain/slice.js';

/** The compute-domain plugin's slice, as NVIDIA publishes it (compute-domains.md §3). */
describe("the compute-domain driver's slice", () => {
  it('one slice in a pool named after the node with channel-0 and daemon-0, typed and numbered', () => {
    const [s, ...more] = computeDomainSlices({ nodeName: 'gb200-0' });
    assert.equal(more.length, 0);
    assert.equal(s?.metadata.generateName, '00000-compute-domain.nvidia.com-gb200-0-');
    assert.deepEqual(s.spec, {
      driver: COMPUTE_DOMAIN_DRIVER,
      pool: { name: 'gb200-0', generation: 1, resourceSliceCount: 1 },
      nodeName: 'gb200-0',
      devices: [
        { name: 'channel-0', attributes: { id: { int: 0 }, type: { string: 'channel' } } },
        { name: 'daemon-0', attributes: { id: { int: 0 }, type: { string: 'daemon' } } },
      ],
    });
  });

  it('host-managed IMEX publishes no daemon device', () => {
    const [s] = computeDomainSlices({ nodeName: 'n', hostManaged: true });
    assert.deepEqual(
      s?.spec.devices?.map((d) => d.name),
      ['channel-0'],
    );
  });
});
