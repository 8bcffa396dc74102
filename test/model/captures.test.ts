import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { DriverRelease } from '../../src/model/device/release.js';
import { mergeOverPreset, parseProfileText } from '../../src/model/profile/load.js';
import type { ResourceSliceSpec } from '../../src/kube/types/resource.js';
import { render } from '../support/render.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/**
 * Slices captured from real nodes running NVIDIA's driver, re-typed as fixtures. Each is rendered from
 * the matching preset with only the board UUIDs (random per GPU) taken from the capture; everything else
 * must come out identical.
 */
const dir = join(REPO_ROOT, 'test', 'fixtures', 'captures');

interface Capture {
  source: string;
  node: string;
  draDriverRelease: DriverRelease;
  profile: unknown;
  expected: { metadata: { generateName: string }; spec: unknown };
  /** The node's dra.net slice; `exact: false` for hand-trimmed captures, whose every attribute must match. */
  nicExpected: { spec: ResourceSliceSpec; exact: boolean };
}

describe('real captured slices', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  it('exist', () => {
    assert.ok(files.length >= 3);
  });
  for (const f of files) {
    it(`match ${f}`, () => {
      const c = JSON.parse(readFileSync(join(dir, f), 'utf8')) as Capture;
      const profile = parseProfileText(JSON.stringify(c.profile), f);
      const list = render(
        {
          name: profile.metadata.name,
          preset: profile.spec.preset ?? null,
          spec: mergeOverPreset(profile.spec),
        },
        { node: c.node, release: c.draDriverRelease, nics: true },
      );
      assert.equal(list.items.length, 2, 'one GPU slice and one NIC slice');
      const [slice, nicSlice] = list.items;
      assert.deepEqual(slice?.metadata, c.expected.metadata);
      assert.deepEqual(slice.spec, c.expected.spec);
      assert.equal(JSON.stringify(slice.spec), JSON.stringify(c.expected.spec), 'key order too');

      const want = c.nicExpected.spec;
      assert.ok(nicSlice);
      if (c.nicExpected.exact) {
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
