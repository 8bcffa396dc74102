import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { SliceTemplate, type TemplateOptions } from '../../src/fleet/template.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { parseLenientVersion } from '../../src/kube/types/version.js';
import { DRANET } from '../../src/model/nic/attributes.js';
import { PRESET_NAMES } from '../../src/model/preset/index.js';
import { validateSpec, type ResolvedProfile } from '../../src/model/profile/load.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { specKey } from '../../src/kube/publish/pool.js';
import { renderSlices } from '../../src/model/render.js';
import { DRIVER_NAME } from '../../src/model/slice/build.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/** Node names unlike the template's, including ones that contain what a slice also contains. */
const NODES = ['kwok-gpu-0', 'a', 'gpu-0', 'node.example.com', `n-${'x'.repeat(60)}`, 'gpu.nvidia.com'];

function options(dynamicMig: boolean, nics: boolean): TemplateOptions {
  return {
    dynamicMig,
    driverName: DRIVER_NAME,
    kubernetesVersion: parseLenientVersion('1.37.0', 'test'),
    release: DEFAULT_RELEASE,
    nics: nics ? { driverName: DRANET, standardNumaNode: false } : undefined,
  };
}

/** The template's slices for `node` must be what rendering `node` gives, to the byte. */
function assertStamps(profile: ResolvedProfile, opts: TemplateOptions): void {
  const t = SliceTemplate.make(profile, opts);
  assert.ok(t, `${profile.name}: no template`);
  for (const node of NODES) {
    const want: ResourceSlice[] = renderSlices(profile, { ...opts, nodeName: node }).items;
    const got = t.node(node);
    assert.equal(got.length, want.length, `${profile.name} ${node}: slice count`);
    want.forEach((w, i) => {
      const g = got[i];
      assert.ok(g);
      const at = `${profile.name} ${node} slice ${i}`;
      assert.equal(g.driver, w.spec.driver, at);
      assert.equal(g.generateName, w.metadata.generateName, at);
      assert.equal(g.key, specKey(w.spec), at);
      for (const generation of [1, 7])
        assert.equal(
          g.spec(generation),
          JSON.stringify({ ...w.spec, pool: { ...w.spec.pool, generation } }),
          `${at} generation ${generation}`,
        );
    });
  }
}

describe('slice templates (the fleet stamps each node from its profile rendered once)', () => {
  for (const name of PRESET_NAMES) {
    it(`${name}: every node's slices equal its render, plain, dynamic MIG and with NICs`, () => {
      const profile = resolveProfile(name);
      for (const dynamicMig of [false, true])
        for (const nics of [false, true]) assertStamps(profile, options(dynamicMig, nics));
    });
  }

  it('static MIG: MIG device UUIDs follow their GPU from node to node', () => {
    const profile = resolveProfile(join(REPO_ROOT, 'test', 'fixtures', 'profiles', 'dgx-a100-mig.yaml'));
    assertStamps(profile, options(false, false));
    const text = SliceTemplate.make(profile, options(false, false))?.node('a')[0]?.spec(1) ?? '';
    assert.equal(text.match(/"MIG-[0-9a-f-]{36}"/g)?.length, 56);
  });

  it('a UUID fixed by the profile stays the same on every node', () => {
    const profile: ResolvedProfile = {
      name: 'one-fixed',
      preset: null,
      spec: validateSpec(
        { gpus: [{ model: 'A100-SXM4-80GB', uuid: 'GPU-12345678-1234-1234-1234-123456789abc' }] },
        'spec',
      ),
    };
    assertStamps(profile, options(false, false));
    const t = SliceTemplate.make(profile, options(false, false));
    assert.match(t?.node('x')[0]?.spec(1) ?? '', /GPU-12345678-1234-1234-1234-123456789abc/);
  });
});
