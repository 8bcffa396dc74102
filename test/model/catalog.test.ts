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
      'B300',
      'GB200',
      'GB300',
      'RTX-PRO-6000-BSE',
    ]) {
      findModel(k, 'k');
    }
  });

  it('has every NVIDIA GPU instance type of the four clouds that issue 36 lists, at its sizes', () => {
    const types = new Set(PRESETS.map((p) => p.instanceType));
    const missing = [
      ...[
        'g4dn.xlarge',
        'g4dn.metal',
        'g5.xlarge',
        'g6.xlarge',
        'g6.48xlarge',
        'gr6.4xlarge',
        'g6e.48xlarge',
      ],
      ...['p5.4xlarge', 'p5en.48xlarge', 'p6-b200.48xlarge', 'p6-b300.48xlarge', 'p6e-gb200.36xlarge'],
      ...['a2-highgpu-1g', 'a2-megagpu-16g', 'a2-ultragpu-8g', 'g2-standard-4', 'g2-standard-96'],
      ...['a3-highgpu-1g', 'a3-edgegpu-8g', 'a3-megagpu-8g', 'a4-highgpu-8g', 'a4x-maxgpu-4g-metal'],
      ...['Standard_ND96asr_v4', 'Standard_ND96amsr_A100_v4', 'Standard_NC24ads_A100_v4'],
      ...['Standard_NC40ads_H100_v5', 'Standard_NC64as_T4_v3', 'Standard_ND128isr_GB300_v6'],
      ...[
        'BM.GPU.L40S.4',
        'BM.GPU.A100-v2.8',
        'BM.GPU4.8',
        'VM.GPU.A10.1',
        'BM.GPU.B300.8',
        'BM.GPU.GB300.4',
      ],
    ].filter((t) => !types.has(t));
    assert.deepEqual(missing, []);
    // One preset per instance type: a node's label must name exactly one machine.
    const typed = PRESETS.filter((p) => p.instanceType !== undefined);
    assert.equal(new Set(typed.map((p) => p.instanceType)).size, typed.length);
  });
});
