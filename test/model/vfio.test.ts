import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { serialize } from '../../src/cli/output.js';
import { gatesWith } from '../../src/model/feature-gates/gates.js';
import { parseFeatureGates } from '../../src/model/feature-gates/parse.js';
import { renderSlices } from '../../src/model/render.js';
import { uuidV5 } from '../../src/model/device/uuid-v5.js';
import { addressableMemoryBytes, pciDeviceName } from '../../src/model/device/pci-db.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { apiViolations } from '../support/api-limits.js';
import { devicesOf, RENDER_OPTIONS } from '../support/render.js';

const golden = join(REPO_ROOT, 'test', 'golden', 'dgx-h100.passthrough.yaml');
const passthrough = gatesWith({ PassthroughSupport: true });

function renderWith(preset: string, gates = passthrough) {
  return renderSlices(resolveProfile(preset), { ...RENDER_OPTIONS, nodeName: 'golden-node', gates });
}

describe('PassthroughSupport: gpu-vfio-<i> devices', () => {
  it('dgx-h100 with the gate renders the checked-in expectation byte for byte', () => {
    const list = renderWith('dgx-h100');
    assert.deepEqual(apiViolations(list.items), []);
    const text = serialize(list, 'yaml');
    if (process.env.UPDATE_GOLDEN === '1' || !existsSync(golden)) writeFileSync(golden, text);
    assert.equal(text, readFileSync(golden, 'utf8'));
  });

  it('one gpu-vfio-<i> per GPU, numbered in PCI-address order, beside gpu-<minor> in the same slice', () => {
    const devices = devicesOf(renderWith('dgx-h100'));
    const vfio = devices.filter((d) => d.name.startsWith('gpu-vfio-'));
    assert.equal(vfio.length, 8);
    const buses = vfio.map((d) => {
      const a = d.attributes?.['resource.kubernetes.io/pciBusID'];
      return a && 'string' in a ? a.string : '';
    });
    assert.deepEqual(buses, [...buses].sort());
    assert.deepEqual(
      vfio.map((d) => d.name),
      buses.map((_, i) => `gpu-vfio-${i}`),
    );
    const v0 = vfio[0];
    assert.ok(v0);
    const a = v0.attributes ?? {};
    assert.deepEqual(a['type'], { string: 'vfio' });
    assert.deepEqual(a['uuid'], { string: uuidV5(buses[0] ?? '') });
    assert.deepEqual(a['deviceID'], { string: '0x2330' });
    assert.deepEqual(a['vendorID'], { string: '0x10de' });
    assert.deepEqual(a['productName'], { string: 'GH100 [H100 SXM5 80GB]' });
    assert.deepEqual(a['iommuFDEnabled'], { bool: false });
    // 128 GiB BAR1 + 32 MiB BAR3, rounded up to a power of two.
    assert.deepEqual(v0.capacity, { addressableMemory: { value: '256Gi' } });
    assert.equal(v0.consumesCounters, undefined);
  });

  it('no VFIO device without the gate, nor for a GPU with MIG devices', () => {
    assert.equal(
      devicesOf(renderWith('dgx-h100', gatesWith({}))).some((d) => d.name.startsWith('gpu-vfio-')),
      false,
    );
    const mig = resolveProfile(join(REPO_ROOT, 'test', 'fixtures', 'profiles', 'dgx-a100-mig.yaml'));
    const devices = devicesOf(renderSlices(mig, { ...RENDER_OPTIONS, gates: passthrough }));
    assert.equal(
      devices.some((d) => d.name.startsWith('gpu-vfio-')),
      false,
    );
  });

  it('uuid is RFC 4122 version 5 of the PCI address in the DNS namespace (Go uuid.NewSHA1)', () => {
    // Python: uuid.uuid5(uuid.NAMESPACE_DNS, '0000:1b:00.0')
    assert.equal(uuidV5('0000:1b:00.0'), '90d1ede6-4660-56ab-bea3-b9875fe7e5eb');
  });

  it('PCI-DB names and 64-bit BAR totals; unknown devices as go-nvlib names them', () => {
    assert.equal(pciDeviceName(0x2331), 'GH100 [H100 PCIe]');
    assert.equal(pciDeviceName(0xffff), 'UNKNOWN_DEVICE');
    assert.equal(addressableMemoryBytes(0x1eb8), 512n * 1024n * 1024n);
  });

  it('--feature-gates PassthroughSupport=true is accepted on every release that has it', () => {
    for (const release of ['25.12', '0.4', '0.5'] as const)
      assert.equal(
        parseFeatureGates('PassthroughSupport=true', release, '--feature-gates').PassthroughSupport,
        true,
      );
  });

  it("--feature-gates PassthroughSupport=true,DeviceMetadata=true is accepted from 0.4, and DeviceMetadata alone refused in NVIDIA's words", () => {
    for (const release of ['0.4', '0.5'] as const)
      assert.equal(
        parseFeatureGates('PassthroughSupport=true,DeviceMetadata=true', release, '--feature-gates')
          .DeviceMetadata,
        true,
      );
    assert.throws(() => parseFeatureGates('DeviceMetadata=true', '0.5', '--feature-gates'), {
      message: '--feature-gates: feature gate DeviceMetadata requires PassthroughSupport to also be enabled',
    });
  });
});
