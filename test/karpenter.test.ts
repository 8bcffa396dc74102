import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { DEFAULT_RELEASE } from '../src/device/release.js';
import { Fleet } from '../src/fleet/fleet.js';
import { karpenterTemplates, templatesOf } from '../src/karpenter/templates.js';
import { KWOK_ANNOTATION } from '../src/k8s/kwok.js';
import { DRANET } from '../src/nic/attributes.js';
import { INSTANCE_TYPE_LABEL } from '../src/preset/index.js';
import { DRIVER_NAME } from '../src/slice/build.js';
import { FakeApi } from './support/fake-api.js';
import { testFleet } from './support/fleet.js';
import { until } from './support/http.js';

/**
 * What an autoscaler is told a node of an instance type will have (`fakegpu export karpenter`) is what the
 * fleet publishes once such a node exists: every instance type with a preset, node by node, both drivers.
 */
describe("Karpenter's ResourceSliceTemplates and the fleet agree", () => {
  let fleet: Fleet | undefined;
  afterEach(() => fleet?.stop());

  for (const dynamicMig of [false, true]) {
    it(`for every instance type${dynamicMig ? ', with dynamic MIG' : ''}`, async () => {
      const exported = karpenterTemplates({
        dynamicMig,
        kubernetesVersion: { major: 1, minor: 37, patch: 0 },
        release: DEFAULT_RELEASE,
      });
      assert.ok(exported.length >= 12);
      const api = new FakeApi();
      exported.forEach((t, i) => {
        api.putNode(`node-${i}`, { [INSTANCE_TYPE_LABEL]: t.instanceType }, { [KWOK_ANNOTATION]: 'fake' });
      });
      fleet = testFleet(api, {
        defaultProfile: undefined,
        dynamicMig,
        nics: { driverName: DRANET, standardNumaNode: false },
        concurrency: 4,
      });
      await fleet.start();
      const want = exported.reduce((n, t) => n + t.resourceSliceTemplates.length, 0);
      await until('converged', () => fleet?.converged() === true && api.slices.size === want, 20_000);
      exported.forEach((t, i) => {
        const published = [...api.slices.values()]
          .filter((s) => s.spec.nodeName === `node-${i}`)
          .sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
        for (const driver of [DRIVER_NAME, DRANET]) {
          const mine = (xs: { driver: string }[]) => xs.filter((x) => x.driver === driver);
          assert.deepEqual(
            mine(templatesOf(published, new Set(t.perNodeAttributes))),
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
    });
  }
});
