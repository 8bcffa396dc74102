import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { parseConsumableShares } from '../../src/model/device/consumable-shares.js';
import { resolveGates } from '../../src/model/feature-gates/parse.js';
import { Fleet } from '../../src/fleet/fleet.js';
import { KWOK_ZONES, kwokInstanceTypes } from '../../src/tools/karpenter/instance-types.js';
import { bindingsOf, karpenterTemplates, templatesOf } from '../../src/tools/karpenter/templates.js';
import { SOURCES } from '../../src/model/catalog/sources.js';
import { KWOK_ANNOTATION } from '../../src/kube/kwok.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import { INSTANCE_TYPE_LABEL, INSTANCE_TYPES, PRESETS } from '../../src/model/preset/index.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { COMPUTE_DOMAIN_DRIVER } from '../../src/model/compute-domain/slice.js';
import { FakeApi } from '../support/fake-api.js';
import { FakeObjects } from '../support/fake-objects.js';
import { testFleet } from '../support/fleet.js';
import { until } from '../support/http.js';

/**
 * What an autoscaler is told a node of an instance type will have (`fakegpu export karpenter`) is what the
 * fleet publishes once such a node exists: every instance type with a preset, node by node, every driver.
 */
describe("Karpenter's ResourceSliceTemplates and the fleet agree", () => {
  let fleet: Fleet | undefined;
  afterEach(() => fleet?.stop());

  // Consumable shares change every GPU's devices (capacity, multiple allocations): the templates follow.
  const shared = resolveGates('ConsumableShares=true', DEFAULT_RELEASE, false, '--feature-gates');
  for (const [dynamicMig, gates, consumableShares] of [
    [false, undefined, undefined],
    [true, undefined, undefined],
    [false, shared, parseConsumableShares('memory', shared)],
  ] as const) {
    it(`for every instance type${dynamicMig ? ', with dynamic MIG' : ''}${gates ? ', with consumable shares' : ''}`, async () => {
      const exported = karpenterTemplates({
        dynamicMig,
        kubernetesVersion: { major: 1, minor: 37, patch: 0 },
        release: DEFAULT_RELEASE,
        gates,
        consumableShares,
      });
      if (consumableShares)
        assert.ok(
          exported[0]?.resourceSliceTemplates.some((t) => t.devices?.some((d) => d.allowMultipleAllocations)),
          'a GPU offered in shares',
        );
      assert.ok(exported.length >= 12);
      const api = new FakeApi();
      exported.forEach((t, i) => {
        api.putNode(`node-${i}`, { [INSTANCE_TYPE_LABEL]: t.instanceType }, { [KWOK_ANNOTATION]: 'fake' });
      });
      // As the fleet runs by default: the compute-domain side on, so GB200 and GB300 nodes get its slice.
      fleet = testFleet(api, {
        defaultProfile: undefined,
        dynamicMig,
        gates,
        consumableShares,
        nics: { driverName: DRANET, standardNumaNode: false },
        computeDomains: { namespace: 'fakegpu', api: new FakeObjects(), periodMs: 3_600_000 },
        concurrency: 4,
      });
      await fleet.start();
      const want = exported.reduce((n, t) => n + t.resourceSliceTemplates.length, 0);
      await until('converged', () => fleet?.converged() === true && api.slices.size === want, 20_000);
      exported.forEach((t, i) => {
        const published = [...api.slices.values()]
          .filter((s) => s.spec.nodeName === `node-${i}`)
          .sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
        for (const driver of [DRIVER_NAME, DRANET, COMPUTE_DOMAIN_DRIVER]) {
          const mine = (xs: { driver: string }[]) => xs.filter((x) => x.driver === driver);
          assert.deepEqual(
            mine(templatesOf(published, new Set(t.perNodeAttributes), t.instanceType)),
            mine(t.resourceSliceTemplates),
            `${t.instanceType} ${driver}`,
          );
        }
        const gpus = published
          .flatMap((s) => s.spec.devices ?? [])
          .filter((d) => {
            const type = d.attributes?.['type'];
            return type !== undefined && 'string' in type && type.string === 'gpu';
          });
        assert.equal(gpus.length, t.gpus, t.instanceType);
      });
      const domains = exported.filter((t) =>
        t.resourceSliceTemplates.some((s) => s.driver === COMPUTE_DOMAIN_DRIVER),
      );
      assert.deepEqual(domains.map((t) => t.preset).sort(), [
        'aws-p6e-gb200.36xlarge',
        'azure-nd-gb200-v6',
        'azure-nd-gb300-v6',
        'gcp-a4x-highgpu-4g',
        'gcp-a4x-maxgpu-4g-metal',
        'oci-bm.gpu.gb200.4',
        'oci-bm.gpu.gb300.4',
      ]);
    });
  }
});

/**
 * What Karpenter's allocator keys templates by (cloudprovider.DeviceID: driver, pool, device): pools named
 * after the instance type, and devices on one PCIe root bound to each other across drivers.
 */
describe("Karpenter's templates: pools and PCIe-root bindings", () => {
  const exported = karpenterTemplates({
    dynamicMig: false,
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: DEFAULT_RELEASE,
  });

  it("names every template's pool after its instance type", () => {
    for (const t of exported)
      for (const s of t.resourceSliceTemplates) assert.equal(s.pool.name, t.instanceType, t.instanceType);
  });

  it('binds the GPUs and EFA NICs of one p5.48xlarge PCIe root, and names only devices of the templates', () => {
    const p5 = exported.find((t) => t.instanceType === 'p5.48xlarge');
    assert.ok(p5);
    // Eight roots, each one H100 and four EFA NICs (32 in all).
    assert.equal(p5.attributeBindings.length, 8);
    for (const b of p5.attributeBindings) {
      assert.equal(b.attribute, 'resource.kubernetes.io/pcieRoot');
      assert.deepEqual(
        b.devices.map((d) => d.driver).sort(),
        [DRANET, DRANET, DRANET, DRANET, DRIVER_NAME],
        JSON.stringify(b),
      );
    }
    const known = new Set(
      p5.resourceSliceTemplates.flatMap((s) =>
        (s.devices ?? []).map((d) => `${s.driver}/${s.pool.name}/${d.name}`),
      ),
    );
    for (const b of p5.attributeBindings)
      for (const d of b.devices) assert.ok(known.has(`${d.driver}/${d.pool}/${d.device}`), JSON.stringify(d));
  });

  it('binds nothing where a root holds one device', () => {
    const one = [
      {
        driver: 'gpu.nvidia.com',
        pool: { name: 't' },
        devices: [
          { name: 'gpu-0', attributes: { 'resource.kubernetes.io/pcieRoot': { string: 'pci0000:00' } } },
        ],
      },
    ];
    assert.deepEqual(bindingsOf(one, 'resource.kubernetes.io/pcieRoot'), []);
  });
});

/**
 * The instance types Karpenter's KWOK provider is given (`fakegpu export karpenter-kwok`, `cluster up
 * --with karpenter`): one per preset with an instance type, with the cloud's sizes and as many
 * `nvidia.com/gpu` as the fleet publishes GPUs for a node of it.
 */
describe("Karpenter's KWOK instance types", () => {
  const types = kwokInstanceTypes('extended-resource');
  const templates = karpenterTemplates({
    dynamicMig: false,
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: DEFAULT_RELEASE,
  });

  it('has every instance type with a preset, each with its sizes and source', () => {
    assert.deepEqual(
      types.map((t) => t.name),
      [...INSTANCE_TYPES.keys()],
    );
    for (const p of PRESETS.filter((x) => x.instanceType)) {
      assert.ok(p.instance, `${p.name} has the instance's sizes`);
      assert.ok(p.instance.source.ref in SOURCES && p.instance.priceSource.ref in SOURCES, p.name);
      assert.ok(p.instance.source.confirmed || p.instance.source.note, `${p.name}: an inference says why`);
    }
  });

  it("gives nvidia.com/gpu as the fleet publishes GPUs, and the EC2 API's sizes for p5.48xlarge", () => {
    for (const t of types)
      assert.equal(
        t.resources['nvidia.com/gpu'],
        String(templates.find((x) => x.instanceType === t.name)?.gpus),
        t.name,
      );
    const p5 = types.find((t) => t.name === 'p5.48xlarge');
    assert.deepEqual(p5?.resources, { cpu: '192', memory: '2097152Mi', pods: '100', 'nvidia.com/gpu': '8' });
    assert.equal(p5.architecture, 'amd64');
    assert.equal(types.find((t) => t.name === 'BM.GPU.GB200.4')?.architecture, 'arm64');
  });

  it("offers GPUs as DRA devices only by default: no nvidia.com/gpu beside the slices' GPUs", () => {
    for (const t of kwokInstanceTypes('dra')) {
      assert.equal(t.resources['nvidia.com/gpu'], undefined, t.name);
      assert.deepEqual(Object.keys(t.resources).sort(), ['cpu', 'memory', 'pods'], t.name);
    }
  });

  it('offers each on demand in the KWOK zones, in the field names the provider reads', () => {
    for (const t of types) {
      assert.equal(t.offerings.length, KWOK_ZONES.length);
      for (const o of t.offerings) {
        assert.ok(o.Price > 0 && o.Available, t.name);
        assert.deepEqual(
          o.Requirements.map((r) => r.key),
          ['karpenter.sh/capacity-type', 'topology.kubernetes.io/zone'],
        );
      }
    }
  });
});
