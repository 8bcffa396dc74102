import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { itAcceptsExamples, readExample, serverDryRun } from '../support/examples.js';
import { integrationsCluster } from '../support/integrations.js';

/**
 * The docs' Karpenter and Kueue examples, applied with a server-side dry run to the one cluster that
 * serves their CRDs and runs Kueue's webhooks; nothing is stored, so the suite's own tests see none of it.
 */
describe('the docs’ Karpenter and Kueue examples on the API server (server-side dry run)', () => {
  let e: Exports;
  before(async () => {
    e = await integrationsCluster();
  });

  itAcceptsExamples(() => e, 'integrations-cluster');

  it('refuses a broken NodePool with the API server’s words, so a bad one cannot pass', () => {
    const pool = readExample('examples/integrations/karpenter-nodepool.yaml');
    assert.match(pool, /operator: In,/);
    const r = serverDryRun(e, pool.replace('operator: In,', 'operator: Inside,'));
    assert.notEqual(r.code, 0);
    assert.match(r.err, /operator.*Unsupported value: "Inside"/);
  });
});
