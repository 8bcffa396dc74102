import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { NODE_MONITOR_GRACE_S } from '../../src/local-cluster/components.js';
import { REPO_ROOT } from '../../src/process/repo.js';

interface Stage {
  metadata?: { name?: string };
  spec?: { delay?: { durationMilliseconds?: number; jitterDurationMilliseconds?: number } };
}

const stages = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy', 'kwok', 'stages.yaml'), 'utf8')).map(
  (d) => d.toJS() as Stage | null,
);

describe("KWOK's node heartbeat (deploy/kwok/stages.yaml)", () => {
  const delay = stages.find((s) => s?.metadata?.name === 'fakegpu-node-heartbeat')?.spec?.delay;

  it("comes before the controller manager's grace period runs out, however it is jittered", () => {
    assert.ok(delay?.jitterDurationMilliseconds, 'the heartbeat stage is jittered');
    assert.ok(
      delay.jitterDurationMilliseconds < NODE_MONITOR_GRACE_S * 1000,
      `at most ${String(delay.jitterDurationMilliseconds)} ms apart, under ${String(NODE_MONITOR_GRACE_S)} s`,
    );
  });

  it('leaves 45 minutes after a node is Ready free of its PATCHes, which at 50,000 nodes cost KWOK 0.4 of a core', () => {
    // A 50,000-node bench:fleet spends 12-25 minutes creating nodes and lifting their taints, then 7
    // measuring: its phases must not meet the first heartbeats, or only its second phase does.
    assert.ok((delay?.durationMilliseconds ?? 0) >= 45 * 60_000, JSON.stringify(delay));
  });
});
