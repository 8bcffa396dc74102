import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { DriverRelease } from '../src/device/release.js';
import { mergeOverPreset, parseProfileText } from '../src/profile/load.js';
import { render } from './support/render.js';

/**
 * Slices captured from real nodes running NVIDIA's driver, re-typed as fixtures. Each is rendered from
 * the matching preset with only the board UUIDs (random per GPU) taken from the capture; everything else
 * must come out identical.
 */
const here = dirname(fileURLToPath(import.meta.url));
const dir = join(here, '..', '..', 'test', 'fixtures', 'captures');

interface Capture {
  source: string;
  node: string;
  draDriverRelease: DriverRelease;
  profile: unknown;
  expected: { metadata: { generateName: string }; spec: unknown };
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
        { node: c.node, release: c.draDriverRelease },
      );
      assert.equal(list.items.length, 1);
      const [slice] = list.items;
      assert.deepEqual(slice?.metadata, c.expected.metadata);
      assert.deepEqual(slice.spec, c.expected.spec);
      assert.equal(JSON.stringify(slice.spec), JSON.stringify(c.expected.spec), 'key order too');
    });
  }
});
