import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { gatesWith } from '../../src/model/feature-gates/gates.js';
import type { CdiSpec } from '../../src/node/cdi/spec.js';
import { CheckpointStore } from '../../src/node/checkpoint/checkpoint.js';
import type { AllocationConfig, ResourceClaim } from '../../src/kube/types/claim.js';
import { PassthroughState } from '../../src/node/prepare/passthrough-state.js';
import { withoutSiblings } from '../../src/model/device/vfio.js';
import { FAKE_MAJOR } from '../../src/node/prepare/node.js';

import { gatedModel, NODE } from '../support/node-state.js';
const passthrough = gatesWith({ PassthroughSupport: true });
const withMetadata = gatesWith({ PassthroughSupport: true, DeviceMetadata: true });
const V1 = 'resource.nvidia.com/v1beta1';

function setup(gates = passthrough) {
  const root = mkdtempSync(join(tmpdir(), 'fakegpu-vfio-'));
  const model = gatedModel(gates);
  const cdiRoot = join(root, 'cdi');
  const make = () =>
    new PassthroughState(
      model.machine,
      model.nvml,
      model.devices,
      new CheckpointStore(join(root, 'state', 'checkpoint.json')),
      {
        driverName: 'gpu.nvidia.com',
        nodeName: NODE,
        cdiRoot,
        stateDir: join(root, 'state'),
        gates,
        release: '0.5',
      },
    );
  const state = make();
  state.restore();
  /** The device names the node publishes now. */
  const published = (s: PassthroughState) =>
    withoutSiblings(model.devices, s.preparedDevices()).flatMap((g) => g.devices.map((d) => d.name));
  return { root, cdiRoot, make, state, published };
}

function claim(uid: string, devices: string[], configs: Partial<AllocationConfig>[] = []): ResourceClaim {
  return {
    metadata: { name: `claim-${uid}`, namespace: 'default', uid },
    status: {
      allocation: {
        devices: {
          results: devices.map((d, i) => ({
            request: `r${i}`,
            driver: 'gpu.nvidia.com',
            pool: NODE,
            device: d,
          })),
          config: configs.map((c) => ({ source: 'FromClaim' as const, ...c })),
        },
      },
    },
  };
}

const vfioConfig = (iommu?: unknown, requests?: string[]): Partial<AllocationConfig> => ({
  ...(requests ? { requests } : {}),
  opaque: {
    driver: 'gpu.nvidia.com',
    parameters: { apiVersion: V1, kind: 'VfioDeviceConfig', ...(iommu === undefined ? {} : { iommu }) },
  },
});

const spec = (cdiRoot: string, uid: string): CdiSpec =>
  parse(readFileSync(join(cdiRoot, `k8s.gpu.nvidia.com-claim_${uid}.yaml`), 'utf8')) as CdiSpec;

const failure = (uid: string, cause: string) =>
  `error preparing devices for claim default/claim-${uid}:${uid}: prepare devices failed: ${cause}`;

describe('VFIO prepare: fake /dev/vfio nodes through CDI', () => {
  it("gives /dev/vfio/<group> per device and NVIDIA_VISIBLE_DEVICES=void, on fakegpu's major", async () => {
    const t = setup();
    const [d] = await t.state.prepare(claim('v1', ['gpu-vfio-0']));
    assert.deepEqual(d?.cdiDeviceIds, ['k8s.gpu.nvidia.com/claim=v1-gpu-vfio-0']);
    const s = spec(t.cdiRoot, 'v1');
    assert.deepEqual(s.containerEdits, { env: ['NVIDIA_VISIBLE_DEVICES=void'] });
    assert.deepEqual(s.devices, [
      {
        name: 'v1-gpu-vfio-0',
        containerEdits: {
          deviceNodes: [
            { path: '/dev/vfio/16', type: 'c', major: FAKE_MAJOR, minor: 528, permissions: 'rw' },
          ],
        },
      },
    ]);
  });

  it('enableAPIDevice adds /dev/vfio/vfio (also for PreferIommuFD: the fake node has no /dev/iommu)', async () => {
    for (const backendPolicy of ['LegacyOnly', 'PreferIommuFD']) {
      const t = setup();
      await t.state.prepare(
        claim('a1', ['gpu-vfio-1'], [vfioConfig({ backendPolicy, enableAPIDevice: true })]),
      );
      assert.deepEqual(
        spec(t.cdiRoot, 'a1').containerEdits?.deviceNodes?.map((n) => n.path),
        ['/dev/vfio/vfio'],
      );
    }
  });

  it("refuses with NVIDIA's words: bad policy, unknown field, wrong device type, two groups", async () => {
    const t = setup();
    await assert.rejects(
      t.state.prepare(claim('b1', ['gpu-vfio-0'], [vfioConfig({ backendPolicy: 'Foo' })])),
      {
        message: failure(
          'b1',
          'error validating GPU config: unknown IOMMU backend policy: Foo, supported IOMMU backend policies: LegacyOnly, PreferIommuFD',
        ),
      },
    );
    await assert.rejects(t.state.prepare(claim('b2', ['gpu-vfio-0'], [vfioConfig({ foo: 1 })])), {
      message: failure(
        'b2',
        'error getting opaque device configs: error decoding config parameters: strict decoding error: unknown field "iommu.foo"',
      ),
    });
    await assert.rejects(t.state.prepare(claim('b3', ['gpu-0'], [vfioConfig({}, ['r0'])])), {
      message: failure('b3', 'cannot apply VfioDeviceConfig to device "gpu-0" of type "gpu" (request: r0)'),
    });
    await assert.rejects(
      t.state.prepare(claim('b4', ['gpu-vfio-0', 'gpu-vfio-1'], [vfioConfig({}, ['r0'])])),
      {
        message: failure(
          'b4',
          'claim default/claim-b4:b4 contains 2 VFIO device groups, but at most one is supported per claim',
        ),
      },
    );
  });
});

describe("NVIDIA's sibling rule: one GPU is never a GPU and a VFIO device at once", () => {
  it('a prepared gpu-vfio-<i> hides gpu-<minor> of the same GPU, and a claim for it finds no allocatable', async () => {
    const t = setup();
    const before = t.published(t.state);
    assert.ok(before.includes('gpu-0') && before.includes('gpu-vfio-0'));
    await t.state.prepare(claim('v1', ['gpu-vfio-0']));
    const during = t.published(t.state);
    assert.equal(during.includes('gpu-0'), false);
    assert.equal(during.length, before.length - 1);
    await assert.rejects(t.state.prepare(claim('g1', ['gpu-0'])), {
      message: failure('g1', 'allocatable not found for device "gpu-0"'),
    });
    await t.state.unprepare('v1');
    assert.deepEqual(t.published(t.state), before);
    await t.state.prepare(claim('g1', ['gpu-0']));
    assert.equal(
      t.published(t.state).includes('gpu-vfio-0'),
      false,
      'and back: a GPU claim hides its VFIO sibling',
    );
  });

  it('is derived from the checkpoint: a restart publishes the same slice and keeps refusing', async () => {
    const t = setup();
    await t.state.prepare(claim('v1', ['gpu-vfio-0']));
    const during = t.published(t.state);
    const again = t.make();
    again.restore();
    assert.deepEqual(t.published(again), during);
    assert.deepEqual(spec(t.cdiRoot, 'v1').containerEdits, { env: ['NVIDIA_VISIBLE_DEVICES=void'] });
    await assert.rejects(again.prepare(claim('g1', ['gpu-0'])), {
      message: failure('g1', 'allocatable not found for device "gpu-0"'),
    });
  });

  it('tells its subscribers after every prepare and unprepare, for the republish', async () => {
    const t = setup();
    let calls = 0;
    t.state.subscribe(() => calls++);
    await t.state.prepare(claim('v1', ['gpu-vfio-0']));
    await t.state.unprepare('v1');
    assert.equal(calls, 2);
  });
});

describe('DeviceMetadata (KEP-5304): metadata files mounted through their own CDI spec', () => {
  const metaSpec = (cdiRoot: string, uid: string, request: string): CdiSpec =>
    JSON.parse(
      readFileSync(join(cdiRoot, `gpu.nvidia.com_metadata_${uid}_${request}.json`), 'utf8'),
    ) as CdiSpec;

  it("writes v1beta1 and v1alpha1 per request, attributes only for VFIO devices, and mounts it at KEP-5304's path", async () => {
    const t = setup(withMetadata);
    const c = claim('m1', ['gpu-vfio-0', 'gpu-1']);
    const [vfio, gpu] = await t.state.prepare(c);
    assert.deepEqual(vfio?.cdiDeviceIds, [
      'k8s.gpu.nvidia.com/claim=m1-gpu-vfio-0',
      'gpu.nvidia.com/metadata=m1_r0',
    ]);
    assert.deepEqual(gpu?.cdiDeviceIds, [
      'k8s.gpu.nvidia.com/claim=m1-gpu-1',
      'gpu.nvidia.com/metadata=m1_r1',
    ]);
    const s = metaSpec(t.cdiRoot, 'm1', 'r0');
    assert.equal(s.kind, 'gpu.nvidia.com/metadata');
    const mount = s.devices[0]?.containerEdits.mounts?.[0];
    assert.ok(mount);
    assert.equal(
      mount.containerPath,
      '/var/run/kubernetes.io/dra-device-attributes/resourceclaims/claim-m1/r0/gpu.nvidia.com-metadata.json',
    );
    assert.deepEqual(mount.options, ['ro', 'bind']);
    const docs = readFileSync(mount.hostPath, 'utf8')
      .split(/\n(?=\{)/)
      .map(
        (x) => JSON.parse(x) as { apiVersion: string; requests: { devices: { attributes?: object }[] }[] },
      );
    assert.deepEqual(
      docs.map((d) => d.apiVersion),
      ['metadata.resource.k8s.io/v1beta1', 'metadata.resource.k8s.io/v1alpha1'],
    );
    const entry = docs[0]?.requests[0]?.devices[0] as { name: string; attributes: Record<string, unknown> };
    assert.equal(entry.name, 'gpu-vfio-0');
    assert.deepEqual(entry.attributes['type'], { string: 'vfio' });
    const r1 = metaSpec(t.cdiRoot, 'm1', 'r1').devices[0]?.containerEdits.mounts?.[0]?.hostPath ?? '';
    assert.deepEqual(
      (
        JSON.parse(readFileSync(r1, 'utf8').split(/\n(?=\{)/)[0] ?? '') as {
          requests: { devices: object[] }[];
        }
      ).requests[0]?.devices,
      [{ driver: 'gpu.nvidia.com', pool: NODE, name: 'gpu-1' }],
    );
    await t.state.unprepare('m1');
    assert.equal(existsSync(r1), false);
    assert.deepEqual(readdirSync(t.cdiRoot), []);
  });

  it("a template claim's file is under resourceclaimtemplates/<pod claim name>", async () => {
    const t = setup(withMetadata);
    const c = claim('m2', ['gpu-vfio-0']);
    c.metadata.annotations = { 'resource.kubernetes.io/pod-claim-name': 'vm-gpu' };
    await t.state.prepare(c);
    assert.equal(
      metaSpec(t.cdiRoot, 'm2', 'r0').devices[0]?.containerEdits.mounts?.[0]?.containerPath,
      '/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/vm-gpu/r0/gpu.nvidia.com-metadata.json',
    );
  });

  it('a start removes the metadata specs of claims no record holds, and keeps the held ones', async () => {
    const t = setup(withMetadata);
    await t.state.prepare(claim('m3', ['gpu-vfio-0']));
    writeFileSync(join(t.cdiRoot, 'gpu.nvidia.com_metadata_gone_r0.json'), '{}');
    t.make().restore();
    assert.deepEqual(readdirSync(t.cdiRoot).sort(), [
      'gpu.nvidia.com_metadata_m3_r0.json',
      'k8s.gpu.nvidia.com-claim_m3.yaml',
    ]);
  });

  it('without the gate, no metadata', async () => {
    const t = setup();
    const [d] = await t.state.prepare(claim('m4', ['gpu-vfio-0']));
    assert.deepEqual(d?.cdiDeviceIds, ['k8s.gpu.nvidia.com/claim=m4-gpu-vfio-0']);
    assert.deepEqual(readdirSync(t.cdiRoot), ['k8s.gpu.nvidia.com-claim_m4.yaml']);
  });
});
