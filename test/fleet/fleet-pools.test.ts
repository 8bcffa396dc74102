import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { Fleet } from '../../src/fleet/fleet.js';
import { DEFAULT_POOL_LABEL, loadPools, parsePools } from '../../src/fleet/pools.js';
import { PooledKubeConfig } from '../../src/kube/client.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';

const head = 'apiVersion: fakegpu.dev/v1alpha1\nkind: FleetPools\n';

describe('fleet pools file', () => {
  it('resolves presets, inline specs and per-pool dynamic MIG', () => {
    const p = parsePools(
      `${head}poolLabel: karpenter.sh/nodepool\npools:\n` +
        '  h100: { profile: dgx-h100 }\n' +
        '  h100-mig: { profile: dgx-h100, dynamicMig: true }\n' +
        '  old-driver: { spec: { preset: dgx-a100, driver: { version: 550.54.15 } } }\n',
      'pools.yaml',
    );
    assert.equal(p.label, 'karpenter.sh/nodepool');
    assert.deepEqual([...p.byName.keys()], ['h100', 'h100-mig', 'old-driver']);
    assert.equal(p.byName.get('h100')?.profile.name, 'dgx-h100');
    assert.equal(p.byName.get('h100')?.dynamicMig, undefined);
    assert.equal(p.byName.get('h100-mig')?.dynamicMig, true);
    const old = p.byName.get('old-driver')?.profile;
    assert.ok(old);
    assert.equal(old.preset, 'dgx-a100');
    assert.equal(old.spec.driver?.version, '550.54.15');
    // The preset's GPUs are kept under the inline override.
    assert.equal(old.spec.gpus?.length, 8);
  });

  it("takes NVIDIA's gates per pool; the fleet renders each pool with its own", async () => {
    const p = parsePools(
      `${head}pools:\n  lists: { profile: dgx-h100, featureGates: DRAListTypeAttributes=true }\n  plain: { profile: dgx-h100 }\n`,
      'pools.yaml',
    );
    assert.equal(p.byName.get('lists')?.gates?.DRAListTypeAttributes, true);
    assert.equal(p.byName.get('plain')?.gates, undefined, "the fleet's");
    const { Machines } = await import('../../src/fleet/machines.js');
    const m = new Machines({
      profileLabel: 'fakegpu.dev/profile',
      pools: p,
      dynamicMig: false,
      driverName: DRIVER_NAME,
      release: DEFAULT_RELEASE,
      log: pino({ level: 'silent' }),
    });
    const numa = (pool: string) => {
      const slices = m.desired('n', { profile: null, pool });
      assert.ok(Array.isArray(slices));
      const spec = JSON.parse(slices[0]?.spec(1) ?? '{}') as ResourceSlice['spec'];
      return spec.devices?.[0]?.attributes?.['resource.kubernetes.io/numaNode'];
    };
    assert.deepEqual(numa('lists'), { ints: [0] });
    assert.deepEqual(numa('plain'), { int: 0 });
  });

  it('defaults the pool label', () => {
    assert.equal(parsePools(`${head}pools: {}\n`, 'p.yaml').label, DEFAULT_POOL_LABEL);
  });

  const bad: [string, string, RegExp][] = [
    [
      'an unknown preset, naming the pool',
      'pools:\n  a: { profile: dgx-h999 }\n',
      /^pools\.a\.profile: unknown preset "dgx-h999"; known presets: .*dgx-h100/,
    ],
    [
      'both profile and spec',
      'pools:\n  a: { profile: dgx-h100, spec: { preset: dgx-h100 } }\n',
      /^pools\.a: give exactly one of "profile" \(a preset or file\) and "spec" \(inline\)$/,
    ],
    ['neither', 'pools:\n  a: { dynamicMig: true }\n', /^pools\.a: give exactly one of/],
    [
      'an unknown field',
      'pools:\n  a: { profile: dgx-h100, mig: true }\n',
      /^pools\.a: unknown field "mig"; allowed fields: profile, spec, dynamicMig, featureGates, nodes$/,
    ],
    [
      'an inline spec naming an unknown preset',
      'pools:\n  a: { spec: { preset: nope } }\n',
      /^pools\.a\.spec\.preset: unknown preset "nope"/,
    ],
    [
      'a wrong type',
      'pools:\n  a: { profile: dgx-h100, dynamicMig: "yes" }\n',
      /^pools\.a\.dynamicMig: .*"yes"/,
    ],
    [
      'a gate the release does not have',
      'pools:\n  a: { profile: dgx-h100, featureGates: Turbo=true }\n',
      /^pools\.a\.featureGates: unrecognized feature gate: Turbo \(release 0\.5 has /,
    ],
    [
      "dynamic MIG with a gate NVIDIA's rules exclude",
      'pools:\n  a: { profile: dgx-h100, dynamicMig: true, featureGates: NVMLDeviceHealthCheck=true }\n',
      /^pools\.a\.dynamicMig: feature gate DynamicMIG is currently mutually exclusive with NVMLDeviceHealthCheck$/,
    ],
    [
      'a node count that disagrees with the names listed',
      'pools:\n  a: { profile: dgx-h100, nodes: { count: 3, names: [n1, n2] } }\n',
      /^pools\.a\.nodes\.count: 3, but nodes\.names lists 2; give one of them, or both agreeing$/,
    ],
    [
      'a taint effect Kubernetes does not have',
      'pools:\n  a: { profile: dgx-h100, nodes: { count: 1, taints: [{ key: k, effect: Sometimes }] } }\n',
      /^pools\.a\.nodes\.taints\[0\]\.effect: /,
    ],
  ];
  for (const [what, body, message] of bad) {
    it(`refuses ${what}`, () => {
      assert.throws(() => parsePools(head + body, 'pools.yaml'), { message });
    });
  }

  it('refuses another kind and a missing file, naming them', () => {
    assert.throws(
      () => parsePools('apiVersion: fakegpu.dev/v1alpha1\nkind: MachineProfile\npools: {}\n', 'p.yaml'),
      { message: /^kind: must be "FleetPools" \(got "MachineProfile"\)$/ },
    );
    assert.throws(() => loadPools('/nonexistent/pools.yaml'), {
      message: /^--pools: cannot read "\/nonexistent\/pools.yaml" \(ENOENT\)$/,
    });
  });
});

describe('fakegpu fleet, its kubeconfig', () => {
  it('refuses a cluster reached through proxy-url, naming the flag', () => {
    const kc = new PooledKubeConfig(1);
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://api.example.com', proxyUrl: 'http://proxy.example.com:3128' }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
      currentContext: 'ctx',
    });
    assert.throws(
      () =>
        new Fleet(kc, {
          profileLabel: 'fakegpu.dev/profile',
          dynamicMig: false,
          driverName: DRIVER_NAME,
          release: DEFAULT_RELEASE,
          concurrency: 1,
          qps: 0,
          burst: 1,
          log: pino({ level: 'silent' }),
        }),
      { message: /^--kubeconfig: a cluster reached through proxy-url is not supported by the fleet$/ },
    );
  });
});
