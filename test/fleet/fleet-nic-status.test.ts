import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { Fleet } from '../../src/fleet/fleet.js';
import { pendingNicClaim } from '../../src/fleet/nic-status.js';
import type { ClaimStatusApi } from '../../src/kube/claim-status.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import { nicMac } from '../../src/model/hardware/identity.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import { FakeApi } from '../support/fake-api.js';
import { testFleet } from '../support/fleet.js';
import { until } from '../support/http.js';

const KWOK = { [KWOK_ANNOTATION]: 'fake' };
const fleets: Fleet[] = [];
afterEach(async () => {
  for (const f of fleets.splice(0)) await f.stop();
});

function claim(
  uid: string,
  node: string,
  o: { reserved?: boolean; written?: boolean; driver?: string } = {},
): unknown {
  const driver = o.driver ?? DRANET;
  const device = driver === DRANET ? 'pci-0000-18-00-0' : 'gpu-0';
  return {
    metadata: { name: `c-${uid}`, namespace: 'team', uid },
    status: {
      allocation: { devices: { results: [{ request: 'nic', driver, pool: node, device }] } },
      ...(o.reserved === false ? {} : { reservedFor: [{ resource: 'pods', name: 'p', uid: 'p' }] }),
      ...(o.written ? { devices: [{ driver, pool: node, device }] } : {}),
    },
  };
}

function recorder(): ClaimStatusApi & {
  calls: { name: string; body: { status: { devices: unknown[] } } }[];
  fail: boolean;
} {
  const r = {
    calls: [] as { name: string; body: { status: { devices: unknown[] } } }[],
    fail: false,
    applyStatus: (_ns: string, name: string, body: object) => {
      if (r.fail) return Promise.reject(new Error('forbidden'));
      r.calls.push({ name, body: body as { status: { devices: unknown[] } } });
      return Promise.resolve();
    },
  };
  return r;
}

describe("the fleet's NIC claim status for KWOK nodes", () => {
  it('keeps only claims of the driver reserved for a pod and not yet written', () => {
    assert.ok(pendingNicClaim(DRANET, claim('a', 'n')));
    assert.equal(pendingNicClaim(DRANET, claim('a', 'n', { reserved: false })), null);
    assert.equal(pendingNicClaim(DRANET, claim('a', 'n', { written: true })), null);
    assert.equal(pendingNicClaim(DRANET, claim('a', 'n', { driver: 'gpu.nvidia.com' })), null);
    assert.equal(pendingNicClaim(DRANET, { metadata: {} }), null);
  });

  it("writes each pending claim on a served node once, with that node's MAC, and retries a failed write", async () => {
    const api = new FakeApi();
    api.putNode('kwok-0', {}, KWOK);
    const status = recorder();
    status.fail = true;
    let claims: ResourceClaim[] = [claim('a', 'kwok-0'), claim('b', 'elsewhere')].map(
      (c) => pendingNicClaim(DRANET, c) as ResourceClaim,
    );
    const f = testFleet(api, {
      nics: { driverName: DRANET, standardNumaNode: false },
      nicStatus: { api: status, claims: { snapshot: () => claims }, periodMs: 5 },
    });
    fleets.push(f);
    await f.start();
    await until(
      'a failed write',
      () =>
        status.calls.length === 0 &&
        (f as unknown as { nicStatus: { failures: number } }).nicStatus.failures > 0,
    );
    status.fail = false;
    await until('the write', () => status.calls.length === 1);
    const device = status.calls[0]?.body.status.devices[0] as {
      device: string;
      networkData: { hardwareAddress: string };
    };
    assert.equal(status.calls[0]?.name, 'c-a');
    assert.equal(device.networkData.hardwareAddress, nicMac('kwok-0', '0000:18:00.0'));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(status.calls.length, 1, 'written once, not every pass');
    // The watch shows it written: it leaves the pending set and is not written again.
    claims = [];
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(status.calls.length, 1);
  });

  it('writes nothing without NICs', async () => {
    const api = new FakeApi();
    api.putNode('kwok-0', {}, KWOK);
    const status = recorder();
    const f = testFleet(api, {
      nicStatus: {
        api: status,
        claims: { snapshot: () => [pendingNicClaim(DRANET, claim('a', 'kwok-0')) as ResourceClaim] },
        periodMs: 5,
      },
    });
    fleets.push(f);
    await f.start();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(status.calls.length, 0);
  });
});
