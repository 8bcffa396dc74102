import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { DriverRelease } from '../../src/model/device/release.js';
import { mergeOverPreset, parseProfileText } from '../../src/model/profile/load.js';
import type { List, ResourceSlice } from '../../src/kube/types/resource.js';
import { render } from '../support/render.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/**
 * Slices captured from real nodes running NVIDIA's driver, re-typed as fixtures in the form `kubectl get
 * resourceslices -o json` prints (`<capture>.json`), each beside the profile it is rendered from
 * (`<capture>.profile.yaml`: the preset with only the board UUIDs, random per GPU, and the NICs' MACs
 * and addresses taken from the capture); everything else must come out identical. Sources and what was
 * trimmed: test/fixtures/captures/README.md.
 */
const dir = join(REPO_ROOT, 'test', 'fixtures', 'captures');

/** Every capture here is of NVIDIA's driver v25.12: its slice names say so (`diff` reads it from them). */
const RELEASE: DriverRelease = '25.12';
/** Captures whose dra.net slice was trimmed by hand: each attribute left must match, not the whole. */
const TRIMMED = new Set(['oci-bm.gpu.gb200.4.json']);

describe('real captured slices', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  it('exist', () => {
    assert.ok(files.length >= 3);
  });
  for (const f of files) {
    it(`match ${f}`, () => {
      const captured = JSON.parse(readFileSync(join(dir, f), 'utf8')) as List<ResourceSlice>;
      assert.equal(captured.kind, 'List', 'as kubectl get -o json prints it');
      const [gpus, nics] = captured.items;
      assert.ok(gpus && nics, 'one GPU slice and one NIC slice');
      const profileFile = f.replace(/\.json$/, '.profile.yaml');
      const profile = parseProfileText(readFileSync(join(dir, profileFile), 'utf8'), profileFile);
      const list = render(
        {
          name: profile.metadata.name,
          preset: profile.spec.preset ?? null,
          spec: mergeOverPreset(profile.spec),
        },
        { node: gpus.spec.nodeName, release: RELEASE, nics: true },
      );
      assert.equal(list.items.length, 2, 'one GPU slice and one NIC slice');
      const [slice, nicSlice] = list.items;
      assert.deepEqual(slice?.metadata, { generateName: gpus.metadata.generateName });
      assert.deepEqual(slice.spec, gpus.spec);
      assert.equal(JSON.stringify(slice.spec), JSON.stringify(gpus.spec), 'key order too');

      const want = nics.spec;
      assert.ok(nicSlice);
      assert.equal(nicSlice.metadata.generateName, nics.metadata.generateName);
      if (!TRIMMED.has(f)) {
        assert.equal(JSON.stringify(nicSlice.spec), JSON.stringify(want), 'NIC slice, key order too');
        return;
      }
      const got = new Map((nicSlice.spec.devices ?? []).map((d) => [d.name, d.attributes ?? {}]));
      for (const d of want.devices ?? []) {
        const attrs = got.get(d.name);
        assert.ok(attrs, `device ${d.name} published`);
        for (const [k, v] of Object.entries(d.attributes ?? {}))
          assert.deepEqual(attrs[k], v, `${d.name} ${k}`);
      }
    });
  }
});
