import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findModel, GPU_MODELS } from '../../src/model/catalog/index.js';
import { SOURCES } from '../../src/model/catalog/sources.js';
import { PRESETS } from '../../src/model/preset/index.js';
import { GI_PROFILE_ENUM } from '../../src/model/catalog/types.js';
import { migProfileName } from '../../src/model/device/profile-name.js';

const MiB = 1024n * 1024n;

describe('GPU catalog', () => {
  it('names every profile as go-nvlib computes it from memory and total', () => {
    // The real driver derives names from NVML memory figures; inconsistent data would rename profiles.
    for (const m of GPU_MODELS) {
      for (const p of m.mig?.profiles ?? []) {
        assert.equal(
          migProfileName(p.enumName, p.memoryMiB, BigInt(m.memoryMiB) * MiB),
          p.name,
          `${m.key} ${p.name}`,
        );
      }
    }
  });

  it('matches go-nvlib on the worked examples', () => {
    assert.equal(migProfileName('1_SLICE', 9856, 81559n * MiB), '1g.10gb');
    assert.equal(migProfileName('1_SLICE_REV1', 4864, 40960n * MiB), '1g.5gb+me');
    assert.equal(migProfileName('1_SLICE_ALL_ME', 23680, 97887n * MiB), '1g.24gb+me.all');
    assert.equal(migProfileName('2_SLICE_NO_ME', 47616, 97887n * MiB), '2g.48gb-me');
  });

  it('keeps every placement inside the GPU and unique GI ids per model', () => {
    for (const m of GPU_MODELS) {
      if (!m.mig) continue;
      const ids = new Set<number>();
      const enums = new Set<string>();
      for (const p of m.mig.profiles) {
        assert.ok(!ids.has(p.id), `${m.key}: GI id ${p.id} twice`);
        assert.ok(!enums.has(p.enumName), `${m.key}: enum ${p.enumName} twice`);
        ids.add(p.id);
        enums.add(p.enumName);
        assert.ok(p.enumName in GI_PROFILE_ENUM);
        for (const s of p.placements)
          assert.ok(s + p.placementSize <= m.mig.memorySlices, `${m.key} ${p.name}@${s}`);
        assert.ok(p.instances <= p.placements.length, `${m.key} ${p.name} instances`);
        assert.ok(
          p.memoryMiB < m.memoryMiB && p.multiprocessors <= m.multiprocessors,
          `${m.key} ${p.name} fits the GPU`,
        );
      }
    }
  });

  it('cites a known source for every fact and every MIG row', () => {
    for (const m of GPU_MODELS) {
      const refs = [...Object.values(m.provenance), ...(m.mig?.profiles ?? []).map((p) => p.source)];
      for (const r of refs) {
        for (const id of r.ref.split(/,\s*/)) assert.ok(id in SOURCES, `${m.key}: unknown source ${id}`);
        if (!r.confirmed) assert.ok(r.note, `${m.key}: an inferred value must say why`);
      }
    }
  });

  it('cites a known source for every preset aspect', () => {
    for (const p of PRESETS) {
      for (const [aspect, r] of Object.entries(p.provenance)) {
        for (const id of r.ref.split(/,\s*/))
          assert.ok(id in SOURCES, `${p.name}.${aspect}: unknown source ${id}`);
        if (!r.confirmed) assert.ok(r.note, `${p.name}.${aspect}: an inferred value must say why`);
      }
    }
  });

  it('finds models by key or NVML name, and names the known ones otherwise', () => {
    assert.equal(findModel('NVIDIA H100 80GB HBM3', 'm').key, 'H100-SXM5-80GB');
    assert.equal(findModel('h200', 'm').name, 'NVIDIA H200');
    assert.throws(() => findModel('H300', 'spec.gpus[0].model'), {
      message:
        /^spec\.gpus\[0\]\.model: unknown GPU model "H300"; known models: A100-SXM4-40GB, .*RTX-PRO-6000-BSE$/,
    });
  });

  it('has the models the issue names', () => {
    for (const k of [
      'A100-SXM4-40GB',
      'A100-SXM4-80GB',
      'A100-PCIE-40GB',
      'A100-PCIE-80GB',
      'A30',
      'A10',
      'A10G',
      'T4',
      'L4',
      'L40S',
      'H100-SXM5-80GB',
      'H100-PCIE',
      'H100-NVL',
      'H200',
      'GH200',
      'B200',
      'GB200',
      'GB300',
      'RTX-PRO-6000-BSE',
    ]) {
      findModel(k, 'k');
    }
  });
});
