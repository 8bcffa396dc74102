import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freshEtcdFor, type FakegpuMode, type State } from '../../src/local-cluster/state.js';

describe('switching between host processes and the chart', () => {
  /** A state file; `etcdOf` absent is how an older fakegpu wrote it. */
  const state = (helm?: boolean, etcdOf?: FakegpuMode): State => ({
    nodeName: 'n',
    bin: '/b',
    cniBin: '/c',
    profile: 'dgx-h100',
    dynamicMig: false,
    ...(helm === undefined ? {} : { helm }),
    ...(etcdOf === undefined ? {} : { etcdOf }),
  });
  const host = state(false, 'host-processes');
  const chart = state(true, 'helm');

  it('starts from empty etcd data when the previous up ran fakegpu the other way', () => {
    assert.equal(freshEtcdFor(host, chart), true, 'host processes, then --helm');
    assert.equal(freshEtcdFor(chart, host), true, '--helm, then host processes');
    assert.equal(freshEtcdFor(state(), chart), true, "an older fakegpu's host processes, then --helm");
    assert.equal(freshEtcdFor(state(true), host), true, "an older fakegpu's chart, then host processes");
  });

  it("starts from empty data after an older fakegpu's --helm, which may have failed over the host processes' objects", () => {
    // The sequence with the older fakegpu: up, down, up --helm (refused by Helm, state.json
    // already saying helm); then this one's up --helm must not find their DeviceClasses again.
    assert.equal(freshEtcdFor(state(true), chart), true);
  });

  it('keeps etcd data for the same mode, for an older host-process cluster, and for a first up', () => {
    assert.equal(freshEtcdFor(host, host), false);
    assert.equal(freshEtcdFor(chart, chart), false);
    assert.equal(freshEtcdFor(state(), host), false, "an older fakegpu's data, plain-http etcd's, is kept");
    assert.equal(freshEtcdFor(state(false), host), false);
    assert.equal(freshEtcdFor(null, chart), false);
  });
});
