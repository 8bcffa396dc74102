import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { DOMAIN_LABEL, GPU_CLIQUE_LABEL, RACK_LABEL } from '../../src/model/compute-domain/resource.js';
import { COMPUTE_DOMAIN_DRIVER } from '../../src/model/compute-domain/slice.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { channelLabels, channelOf, FleetComputeDomains } from '../../src/fleet/compute-domains.js';
import { Machines, type NodeMachine } from '../../src/fleet/machines.js';
import { parsePools } from '../../src/fleet/pools.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import { FakeObjects } from '../support/fake-objects.js';

const log = pino({ level: 'silent' });

function machines() {
  return new Machines({
    profileLabel: 'fakegpu.dev/profile',
    dynamicMig: false,
    driverName: 'gpu.nvidia.com',
    release: DEFAULT_RELEASE,
    computeDomains: true,
    log,
  });
}

const gb = (rack?: string): NodeMachine => ({
  profile: 'oci-bm.gpu.gb200.4',
  pool: null,
  labels: rack ? { [RACK_LABEL]: rack } : {},
});

/** The fleet's label pass over `nodes`, all of rack nvl72-0, and a reader of a node's labels in the store. */
function labelPass(api: FakeObjects, nodes: string[]) {
  const m = machines();
  const clique = (n: string) => m.clique(n, gb('nvl72-0'));
  const labels = (n: string) =>
    api.read<{ metadata: { labels: Record<string, string> } }>(`/api/v1/nodes/${n}`)?.metadata.labels;
  const f = new FleetComputeDomains({
    api,
    namespace: 'nvidia-dra-driver-gpu',
    log,
    view: { cliqueOf: (n) => (nodes.includes(n) ? clique(n) : undefined), labels, nodes: () => nodes },
  });
  return { f, labels, clique };
}

function channelClaim(node: string, domainID: string, reserved = true): ResourceClaim {
  return {
    metadata: { name: `c-${node}`, namespace: 'team', uid: `u-${node}` },
    status: {
      ...(reserved ? { reservedFor: [{ resource: 'pods', name: 'p', uid: 'p' }] } : {}),
      allocation: {
        devices: {
          results: [{ request: 'channel', driver: COMPUTE_DOMAIN_DRIVER, pool: node, device: 'channel-0' }],
          config: [
            {
              source: 'FromClaim',
              requests: ['channel'],
              opaque: {
                driver: COMPUTE_DOMAIN_DRIVER,
                parameters: {
                  apiVersion: 'resource.nvidia.com/v1beta1',
                  kind: 'ComputeDomainChannelConfig',
                  domainID,
                },
              },
            },
          ],
        },
      },
    },
  };
}

describe("the fleet's ComputeDomain side for KWOK racks", () => {
  it('gives nodes of one rack one clique, another rack another, and machines without fabric none', () => {
    const m = machines();
    const a = m.clique('kwok-gpu-0', gb('nvl72-0'));
    assert.match(a ?? '', /^[0-9a-f-]{36}\.\d+$/);
    assert.equal(m.clique('kwok-gpu-17', gb('nvl72-0')), a);
    assert.notEqual(m.clique('kwok-gpu-18', gb('nvl72-1')), a);
    assert.equal(m.clique('kwok-gpu-0', { profile: 'dgx-h100', pool: null, labels: {} }), null);
  });

  it("takes a node's rack from the pools' rackLabel (a cloud's NVLink-domain label)", () => {
    const pools = parsePools(
      'apiVersion: fakegpu.dev/v1alpha1\nkind: FleetPools\nrackLabel: example.com/nvl-domain\npools:\n  gb: { profile: oci-bm.gpu.gb200.4 }\n',
      'pools.yaml',
    );
    const m = new Machines({
      profileLabel: 'fakegpu.dev/profile',
      pools,
      dynamicMig: false,
      driverName: 'gpu.nvidia.com',
      release: DEFAULT_RELEASE,
      computeDomains: true,
      log,
    });
    const node = (domain: string): NodeMachine => ({
      profile: null,
      pool: 'gb',
      labels: { 'example.com/nvl-domain': domain, [RACK_LABEL]: 'ignored' },
    });
    assert.equal(m.clique('a', node('d1')), m.clique('b', node('d1')));
    assert.notEqual(m.clique('a', node('d1')), m.clique('a', node('d2')));
  });

  it("publishes NVIDIA's compute-domain slice beside the GPUs of a node with NVLink fabric, only there", () => {
    const m = machines();
    const want = m.desired('kwok-gpu-0', gb('nvl72-0'));
    assert.ok(!(want instanceof Error));
    const cd = want.filter((s) => s.driver === COMPUTE_DOMAIN_DRIVER);
    assert.equal(cd.length, 1);
    const h100 = m.desired('kwok-gpu-1', { profile: 'dgx-h100', pool: null });
    assert.ok(!(h100 instanceof Error));
    assert.equal(h100.filter((s) => s.driver === COMPUTE_DOMAIN_DRIVER).length, 0);
  });

  it('labels a node for the domain whose channel claim is reserved there, not before, not for a deleted domain', () => {
    const ours = (n: string) => n.startsWith('kwok-');
    assert.deepEqual(
      [
        ...channelLabels(
          [
            channelClaim('kwok-gpu-0', 'cd-1'),
            channelClaim('kwok-gpu-1', 'cd-1', false),
            channelClaim('real', 'cd-1'),
          ].map(channelOf),
          ours,
        ),
      ],
      [['kwok-gpu-0', 'cd-1']],
    );
  });

  it('sets the clique label as GPU Feature Discovery would, and the domain label from claims; removes it after', async () => {
    const api = new FakeObjects();
    const cd = api.seed('/apis/resource.nvidia.com/v1beta1/namespaces/team/computedomains', {
      metadata: { name: 'job' },
    });
    const uid = String(cd.metadata.uid);
    const nodes = ['kwok-gpu-0', 'kwok-gpu-1'];
    for (const n of nodes)
      api.seed('/api/v1/nodes', { metadata: { name: n, labels: { [RACK_LABEL]: 'nvl72-0' } } });
    api.seed('/apis/resource.k8s.io/v1/namespaces/team/resourceclaims', channelClaim('kwok-gpu-0', uid));
    const { f, labels, clique } = labelPass(api, nodes);
    await f.tick();
    assert.equal(labels('kwok-gpu-0')?.[DOMAIN_LABEL], uid);
    assert.equal(labels('kwok-gpu-1')?.[DOMAIN_LABEL], undefined);
    assert.equal(labels('kwok-gpu-1')?.[GPU_CLIQUE_LABEL], clique('kwok-gpu-1'));
    api.objects.forEach((o, k) => {
      if (o.metadata.name === 'c-kwok-gpu-0') api.objects.delete(k);
    });
    await f.tick();
    assert.equal(labels('kwok-gpu-0')?.[DOMAIN_LABEL], undefined);
  });

  it("labels no node for a claim in another namespace than its domain's, as the plugin's prepare refuses it", async () => {
    const api = new FakeObjects();
    const cd = api.seed('/apis/resource.nvidia.com/v1beta1/namespaces/other/computedomains', {
      metadata: { name: 'job' },
    });
    const nodes = ['kwok-gpu-0'];
    api.seed('/api/v1/nodes', { metadata: { name: 'kwok-gpu-0', labels: {} } });
    api.seed(
      '/apis/resource.k8s.io/v1/namespaces/team/resourceclaims',
      channelClaim('kwok-gpu-0', String(cd.metadata.uid)),
    );
    const { f, labels } = labelPass(api, nodes);
    await f.tick();
    assert.equal(labels('kwok-gpu-0')?.[DOMAIN_LABEL], undefined);
    assert.ok(labels('kwok-gpu-0')?.[GPU_CLIQUE_LABEL], 'the clique label is still set');
  });

  it('goes on past a node whose label write fails, counts it, and writes it the next pass', async () => {
    const api = new FakeObjects();
    const nodes = ['kwok-gpu-0', 'kwok-gpu-1', 'kwok-gpu-2'];
    for (const n of nodes) api.seed('/api/v1/nodes', { metadata: { name: n, labels: {} } });
    const { f, labels } = labelPass(api, nodes);
    api.failNext = { prefix: 'PATCH /api/v1/nodes/kwok-gpu-1', code: 500 };
    await f.tick();
    assert.equal(f.failures, 1);
    assert.deepEqual(
      nodes.map((n) => labels(n)?.[GPU_CLIQUE_LABEL] !== undefined),
      [true, false, true],
    );
    await f.tick();
    assert.ok(labels('kwok-gpu-1')?.[GPU_CLIQUE_LABEL]);
    assert.equal(f.failures, 1);
  });
});
