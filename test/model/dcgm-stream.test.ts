import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { DcgmExporter } from '../../src/model/dcgm/exporter.js';
import { PIECE_BYTES, type Style } from '../../src/model/dcgm/exposition.js';
import { syntheticFleet } from '../support/dcgm-fleet.js';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * What the exposition of `syntheticFleet(400)` was, byte for byte, before it was streamed: hashes of the
 * text the renderer that built every family whole printed (commit f702f8a), first scrape and one 12.345 s
 * later (energy counters and sine loads moved), in both styles. About 19 MiB each.
 */
const BEFORE: Record<Style, [string, string]> = {
  current: [
    'e4410188b38bbdbb3fbb5b962dd8d3c5cdb21d45a0606ae1d1d51e63aec0ef1c',
    '8fa97c34e1e580fdba14d1ddcf3e55a77fc8d8ff8cbcbb1b24bdfcf9f65d653e',
  ],
  legacy: [
    'eac1131609397c400d1f22162c289c2e8f36e704cd32e7ef94f865413c787137',
    'c69974094b976b613cabc126d3546299246531d7fa158ae2ff076c0398003bc8',
  ],
};

describe('the exposition of a large fleet, streamed', () => {
  const { nodes, attribution } = syntheticFleet(400);

  for (const style of ['current', 'legacy'] as const) {
    it(`${style}: the same bytes as the whole-text renderer, in pieces of bounded size with pauses`, () => {
      let now = 0;
      const ex = new DcgmExporter({ style, now: () => now });
      const scrape = (): string => {
        const pieces = [...ex.exposition(nodes, attribution)];
        // A piece is at most one line over the size (a line is under 1 KiB); the walk pauses.
        for (const p of pieces) assert.ok(p.length < PIECE_BYTES + 1024, String(p.length));
        assert.ok(pieces.filter((p) => p === '').length > 10);
        return pieces.join('');
      };
      assert.equal(sha256(scrape()), BEFORE[style][0]);
      now = 12_345;
      assert.equal(sha256(scrape()), BEFORE[style][1]);
    });
  }

  it('readings are of the moment the scrape began, however long it is read', () => {
    let now = 0;
    const ex = new DcgmExporter({ now: () => now });
    ex.render(nodes.slice(0, 4), attribution);
    now = 10_000;
    const slow = ex.exposition(nodes.slice(0, 4), attribution);
    now = 20_000;
    const text = [...slow].join('');
    // 10 s of 70 W idle on an H100 (node 0 has an XID only, so its GPU 2 is idle and whole): 700 J.
    assert.match(
      text,
      /DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\{gpu="2",[^}]*hostname="node-00000"[^}]*\} 700000\n/,
    );
  });
});
