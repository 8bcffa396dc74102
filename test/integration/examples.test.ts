import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { parsePools } from '../../src/fleet/pools.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { testCluster } from '../support/cluster.js';
import {
  assertAccepted,
  examplesChecked,
  itAcceptsExamples,
  manifestObjects,
  readExample,
  serverDryRun,
} from '../support/examples.js';
import { template } from '../support/helm.js';

/**
 * The examples the docs show, applied to the real API server of the test cluster with a server-side
 * dry run: its schemas, the CRDs `cluster up` installs (ComputeDomain, GpuFault) and CEL compile them,
 * and nothing is stored. Helm values are rendered by the chart first.
 */
describe('the docs’ examples on the API server (server-side dry run)', () => {
  let e: Exports;
  before(async () => {
    e = await testCluster();
  });

  itAcceptsExamples(() => e, 'test-cluster');

  for (const f of examplesChecked(REPO_ROOT, 'helm-values')) {
    it(`${f}: the chart renders with them, the API server accepts the result, any pools it mounts parse`, () => {
      const r = template(e, ['--namespace', 'default', '-f', join(REPO_ROOT, f)]);
      assert.equal(r.code, 0, r.err);
      assertAccepted(e, `${f} rendered`, r.out);
      const pools = manifestObjects(r.out)
        .map((o) => o as { kind?: string; data?: Record<string, string> })
        .find((o) => o.kind === 'ConfigMap' && o.data?.['pools.yaml'] !== undefined);
      if (pools?.data?.['pools.yaml'] !== undefined) parsePools(pools.data['pools.yaml'], `${f} pools`);
    });
  }

  it('refuses a broken example with the API server’s words, so a bad one cannot pass', () => {
    const taint = readExample('examples/device-taint-rule.yaml');
    assert.match(taint, /effect: NoExecute/);
    const badEffect = serverDryRun(e, taint.replace('effect: NoExecute', 'effect: Sometimes'));
    assert.notEqual(badEffect.code, 0);
    assert.match(badEffect.err, /spec\.taint\.effect: Unsupported value: "Sometimes"/);
    const claim = readExample('examples/gpus-and-nic-on-one-root.yaml');
    assert.match(claim, /\.rdma == true/);
    const badCel = serverDryRun(e, claim.replace('.rdma == true', '.rdma ==='));
    assert.notEqual(badCel.code, 0);
    assert.match(badCel.err, /cel\.expression: Invalid value/);
  });
});
