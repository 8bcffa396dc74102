import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import type { ClusterView } from '../../src/model/scorecard/inventory.js';
import { score } from '../../src/model/scorecard/score.js';
import { loopback } from '../support/http.js';
import { fakegpuAsync, kubeconfigFor as kubeconfigAt } from '../support/cli-run.js';
import { render } from '../support/render.js';

const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cli-report-'));

const fakegpu = fakegpuAsync;
const kubeconfigFor = (server: string, file: string): string => kubeconfigAt(dir, server, file);

const allocated = (name: string, pool: string, devices: string[]): ResourceClaim => ({
  metadata: { name, namespace: 'default', uid: name },
  status: {
    allocation: {
      devices: {
        results: devices.map((device) => ({ request: 'r', driver: 'gpu.nvidia.com', pool, device })),
      },
    },
  },
});

/** Two DGX H100s of one pool, one with a 2-GPU claim; a third node of another pool, fully used. */
const view: ClusterView = {
  nodes: [
    { metadata: { name: 'a', labels: { 'karpenter.sh/nodepool': 'h100' } } },
    { metadata: { name: 'b', labels: { 'karpenter.sh/nodepool': 'h100' } } },
    { metadata: { name: 'c', labels: { 'karpenter.sh/nodepool': 'l4' } } },
  ],
  slices: [
    ...render('dgx-h100', { node: 'a' }).items,
    ...render('dgx-h100', { node: 'b' }).items,
    ...render('gcp-g2-standard-48', { node: 'c' }).items,
  ],
  claims: [
    allocated('two', 'a', ['gpu-0', 'gpu-1']),
    allocated('four', 'c', ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3']),
  ],
  pods: [],
};

describe('fakegpu report against an API server', () => {
  let server: Awaited<ReturnType<typeof loopback>>;
  let kubeconfig = '';
  before(async () => {
    const lists: Record<string, unknown[]> = {
      '/api/v1/nodes': view.nodes.map((n) => ({ ...n, kind: 'PartialObjectMetadata' })),
      '/apis/resource.k8s.io/v1/resourceslices': [...view.slices],
      '/apis/resource.k8s.io/v1/resourceclaims': [...view.claims],
      '/api/v1/pods': [],
    };
    server = await loopback((req, res) => {
      const items = lists[new URL(req.url ?? '', 'http://x').pathname];
      res.writeHead(items ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(items ? { items, metadata: { resourceVersion: '7' } } : { code: 404 }));
    });
    kubeconfig = kubeconfigFor(server.kc.getCurrentCluster()?.server ?? '', 'fake.yaml');
  });
  after(() => server.close());

  it('prints the cluster, each pool, and the same figures as JSON that the scorecard computes', async () => {
    const r = await fakegpu('report', '--kubeconfig', kubeconfig);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(/\s+/));
    assert.deepEqual(
      rows.map((x) => x.slice(0, 10)),
      [
        ['SCOPE', 'NODES', 'GPUS', 'ALLOCATED', 'FREE', 'TAINTED', 'FULL', 'PARTIAL', 'EMPTY', 'STRANDED'],
        ['cluster', '3', '20', '6', '14', '0', '1', '1', '1', '6'],
        ['pool/h100', '2', '16', '2', '14', '0', '0', '1', '1', '6'],
        ['pool/l4', '1', '4', '4', '0', '0', '1', '0', '0', '0'],
      ],
    );
    const json = await fakegpu('report', '-o', 'json', '--kubeconfig', kubeconfig);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), JSON.parse(JSON.stringify(score(view))));
    assert.ok(server.requests.some((q) => q.startsWith('GET /apis/resource.k8s.io/v1/devicetaintrules')));
  });

  it('refuses a pool label that is no label key in one line, before any request', async () => {
    const before = server.requests.length;
    const r = await fakegpu('report', '--pool-label', 'not a label', '--kubeconfig', kubeconfig);
    assert.deepEqual(r, {
      code: 1,
      stdout: '',
      stderr:
        'fakegpu: --pool-label: "not a label" is not a label key: [prefix/]name, the name at most 63 letters, digits, "-", "_", "."\n',
    });
    assert.equal(server.requests.length, before);
  });

  it('says in one line that the API server is not there', async () => {
    const gone = await loopback(() => undefined);
    const url = gone.kc.getCurrentCluster()?.server ?? '';
    await gone.close();
    const r = await fakegpu('report', '--kubeconfig', kubeconfigFor(url, 'gone.yaml'));
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^fakegpu: --kubeconfig: listing the cluster failed: .*ECONNREFUSED.*\n$/);
  });
});
