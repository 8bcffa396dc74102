import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { GPU_MODELS } from '../../src/model/catalog/index.js';
import { GI_PROFILE_ENUM, type GpuModel } from '../../src/model/catalog/types.js';
import type { Device } from '../../src/kube/types/resource.js';
import { MockNvml } from '../../src/model/nvml/mock.js';
import { MemoryMigStateStore } from '../../src/model/nvml/state.js';
import type { ResolvedProfile } from '../../src/model/profile/load.js';
import { placeLayout } from '../../src/model/mig/layout.js';
import { buildMachine } from '../../src/model/hardware/build.js';
import { devicesOf, render } from '../support/render.js';

const KI: Record<string, bigint> = { '': 1n, Ki: 1024n, Mi: 1024n ** 2n, Gi: 1024n ** 3n };
function qty(v: string): bigint {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(v);
  if (!m) throw new Error(`quantity ${v}`);
  return BigInt(m[1] ?? '0') * (KI[m[2] ?? ''] ?? 1n);
}

function oneGpuProfile(model: GpuModel): ResolvedProfile {
  return {
    name: `one-${model.key}`,
    preset: null,
    spec: { gpus: [{ model: model.key, busId: '0000:3b:00.0' }] },
  };
}

/** The scheduler's rule for partitionable devices: the chosen devices' consumption fits every counter. */
function countersAllow(counterSet: Record<string, { value: string }>, chosen: readonly Device[]): boolean {
  const used = new Map<string, bigint>();
  for (const d of chosen) {
    for (const c of d.consumesCounters ?? []) {
      for (const [k, v] of Object.entries(c.counters)) used.set(k, (used.get(k) ?? 0n) + qty(v.value));
    }
  }
  return [...used].every(([k, v]) => v <= qty(counterSet[k]?.value ?? '0'));
}

const PARSE = /^gpu-\d+-mig-.+-(\d+)-(\d+)$/;

describe('dynamic MIG counters against the hardware rules', () => {
  for (const model of GPU_MODELS.filter((m) => m.mig)) {
    it(`${model.key}: any set the counters admit is a layout the GPU accepts`, () => {
      const list = render(oneGpuProfile(model), { dynamicMig: true });
      const counterSet = list.items[0]?.spec.sharedCounters?.[0]?.counters;
      assert.ok(counterSet, 'counter set published');
      const migs = devicesOf(list).filter((d) => PARSE.test(d.name));
      // Every partition is allocatable on its own.
      for (const d of migs) assert.ok(countersAllow(counterSet, [d]), d.name);
      fc.assert(
        fc.property(fc.shuffledSubarray(migs, { minLength: 1, maxLength: 8 }), (chosen) => {
          if (!countersAllow(counterSet, chosen)) return;
          const machine = buildMachine(oneGpuProfile(model), { nodeName: 'p', dynamicMig: true });
          const nvml = new MockNvml(machine, new MemoryMigStateStore());
          const dev = nvml.deviceGetHandleByIndex(0);
          if (dev.getMigMode()[0] !== 1) dev.setMigMode(1);
          for (const d of chosen) {
            const [, id, start] = PARSE.exec(d.name) ?? [];
            const info = model.mig?.profiles.find((p) => p.id === Number(id));
            assert.ok(info);
            const gi = dev.createGpuInstanceWithPlacement(
              dev.getGpuInstanceProfileInfo(GI_PROFILE_ENUM[info.enumName]),
              { start: Number(start), size: info.placementSize },
            );
            assert.ok(gi.getInfo().id >= 0);
          }
        }),
        { numRuns: 300, seed: 20261130 },
      );
    });
  }

  it('the full GPU consumes everything, so nothing else fits beside it', () => {
    const list = render('dgx-h100', { dynamicMig: true });
    const counterSet = list.items[0]?.spec.sharedCounters?.[0]?.counters ?? {};
    const devs = devicesOf(list).filter((d) => d.name.startsWith('gpu-0'));
    const full = devs.find((d) => d.name === 'gpu-0');
    assert.ok(full);
    for (const d of devs) if (d !== full) assert.equal(countersAllow(counterSet, [full, d]), false, d.name);
  });

  it('admits the layouts operators use: seven 1g slices, 4g+3g, 3g+2g+1g+1g', () => {
    const h100 = GPU_MODELS.find((m) => m.key === 'H100-SXM5-80GB');
    assert.ok(h100);
    const list = render('dgx-h100', { dynamicMig: true });
    const counterSet = list.items[0]?.spec.sharedCounters?.[0]?.counters ?? {};
    const byName = new Map(devicesOf(list).map((d) => [d.name, d]));
    const pick = (...n: string[]): Device[] => n.map((x) => byName.get(`gpu-0-mig-${x}`) ?? assert.fail(x));
    assert.ok(countersAllow(counterSet, pick(...[0, 1, 2, 3, 4, 5, 6].map((i) => `1g10gb-19-${i}`))));
    assert.ok(countersAllow(counterSet, pick('4g40gb-5-0', '3g40gb-9-4')));
    assert.equal(
      countersAllow(counterSet, pick('3g40gb-9-0', '2g20gb-14-4', '1g10gb-19-6', '1g10gb-me-20-5')),
      false,
      'slice 5 twice',
    );
    assert.ok(countersAllow(counterSet, pick('3g40gb-9-0', '2g20gb-14-4', '1g10gb-19-6')));
    assert.equal(
      countersAllow(counterSet, pick('1g10gb-me-20-0', '1g10gb-me-20-1')),
      false,
      'one +me per GPU',
    );
    assert.equal(countersAllow(counterSet, pick('3g40gb-9-0', '4g40gb-5-0')), false, 'overlapping slices');
  });
});

describe('static MIG layouts', () => {
  const a100 = GPU_MODELS.find((m) => m.key === 'A100-SXM4-40GB');
  assert.ok(a100);
  it('places `1g.5gb x7` on the seven 1g placements', () => {
    assert.deepEqual(
      placeLayout(a100, '1g.5gb x7', 'f').map((p) => p.start),
      [0, 1, 2, 3, 4, 5, 6],
    );
  });
  it('places pinned and floating items together', () => {
    assert.deepEqual(
      placeLayout(a100, ['3g.20gb@4', '2g.10gb', '1g.5gb x2'], 'f').map(
        (p) => `${p.profile.name}@${p.start}`,
      ),
      ['2g.10gb@0', '1g.5gb@2', '1g.5gb@3', '3g.20gb@4'],
    );
  });
  it('names the conflicting placement', () => {
    assert.throws(() => placeLayout(a100, '3g.20gb@0, 4g.20gb@0', 'spec.mig.layout'), {
      message:
        'spec.mig.layout: A100-SXM4-40GB: 4g.20gb@0 (memory slices 0-3) overlaps 3g.20gb@0 (memory slices 0-3)',
    });
    assert.throws(() => placeLayout(a100, '3g.20gb@2', 'spec.mig.layout'), {
      message: 'spec.mig.layout: A100-SXM4-40GB: placement 2 is not valid for 3g.20gb; valid starts: 0, 4',
    });
    assert.throws(
      () => placeLayout(a100, '1g.5gb x8', 'spec.mig.layout'),
      /no free placement for 1g\.5gb \(instance 8 of 8\)/,
    );
    assert.throws(
      () => placeLayout(a100, '1g.5gb+me x2', 'spec.mig.layout'),
      /no free placement for 1g\.5gb\+me/,
    );
    assert.throws(() => placeLayout(a100, '1g.6gb', 'spec.mig.layout'), {
      message:
        'spec.mig.layout: A100-SXM4-40GB has no MIG profile "1g.6gb"; its profiles: 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb',
    });
    assert.throws(() => placeLayout(a100, '1g.5gb@0 x2', 'f'), /pins a placement and asks for 2 instances/);
    assert.throws(
      () => placeLayout(a100, 'one big slice', 'f'),
      /item 1 "one big slice" is not a MIG layout item/,
    );
  });
});
