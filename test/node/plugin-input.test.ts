import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkEndpoint, checkKubeconfig } from '../../src/cli/options.js';
import { GATE_NAMES, LOGGING_GATES } from '../../src/model/feature-gates/gates.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { clusterRestart } from '../../src/local-cluster/cluster.js';
import { splitEndpoint } from '../../src/process/endpoint.js';
import { slicesFromFile } from '../../src/node/plugin/machine.js';

/** The plugin's and the cluster's own inputs: each refused with the field, the value and what is allowed. */
describe('plugin and cluster inputs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-input-'));
  const file = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  it("--feature-gates: the chart's values schema allows exactly NVIDIA's gate names", () => {
    const schema = JSON.parse(
      readFileSync(join(REPO_ROOT, 'deploy', 'helm', 'fakegpu', 'values.schema.json'), 'utf8'),
    ) as {
      properties: { featureGates: { anyOf: [{ pattern: string }, { propertyNames: { enum: string[] } }] } };
    };
    const [text, map] = schema.properties.featureGates.anyOf;
    const pattern = text.pattern;
    assert.deepEqual(
      [...map.propertyNames.enum].sort(),
      [...GATE_NAMES, ...LOGGING_GATES].sort(),
      "the map form, as NVIDIA's chart takes it",
    );
    const names = /\(\(([A-Za-z|]+)\)=/.exec(pattern)?.[1]?.split('|') ?? [];
    const gates = [...GATE_NAMES, ...LOGGING_GATES];
    assert.deepEqual([...names].sort(), [...gates].sort());
    assert.match(`${gates.join('=true,')}=true`, new RegExp(pattern));
  });

  it('--http-endpoint: host:port', () => {
    assert.deepEqual(splitEndpoint(':51516'), ['0.0.0.0', 51516]);
    assert.throws(() => splitEndpoint('localhost'), {
      message: '--http-endpoint: "localhost" is not host:port, e.g. "127.0.0.1:51516" or ":51516"',
    });
  });

  it('--slices-file: captured slices republished for this node, other objects refused', () => {
    const slices = slicesFromFile(
      file(
        'ok.yaml',
        'apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1\n  kind: ResourceSlice\n  spec: {driver: x, nodeName: old, pool: {name: old, generation: 7, resourceSliceCount: 1}, devices: [{name: gpu-0}]}\n',
      ),
      'n1',
      'gpu.nvidia.com',
    );
    assert.deepEqual(slices[0]?.spec, {
      driver: 'gpu.nvidia.com',
      nodeName: 'n1',
      pool: { name: 'n1', generation: 1, resourceSliceCount: 1 },
      devices: [{ name: 'gpu-0' }],
    });
    assert.equal(slices[0].metadata.generateName, '00000-gpu.nvidia.com-n1-');
    const empty = file('empty.yaml', 'apiVersion: v1\nkind: List\nitems: []\n');
    assert.throws(() => slicesFromFile(empty, 'n1', 'gpu.nvidia.com'), {
      message: `--slices-file: ${empty} holds no ResourceSlice`,
    });
    const pod = file('pod.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n');
    assert.throws(() => slicesFromFile(pod, 'n1', 'gpu.nvidia.com'), {
      message: `--slices-file: ${pod}: item 0 is a Pod, not a ResourceSlice`,
    });
  });

  it('cluster restart: needs a cluster', async () => {
    const none = join(dir, 'no-cluster');
    await assert.rejects(
      clusterRestart(none, 'kubelet', () => undefined),
      {
        message: `cluster restart: no cluster in ${none}; run "fakegpu cluster up" first`,
      },
    );
  });

  it('--http-endpoint checked before the server starts: digits for the port, a host that resolves', async () => {
    for (const ok of [':51516', '127.0.0.1:0', 'localhost:80', '::1:8080'])
      await checkEndpoint(ok, '--http-endpoint');
    const usage = (ep: string) =>
      `--http-endpoint: "${ep}" is not host:port, e.g. "127.0.0.1:51516" or ":51516"`;
    await assert.rejects(checkEndpoint('1.2.3.4:', '--http-endpoint'), {
      message: `${usage('1.2.3.4:')}: the port must be a number from 0 to 65535`,
    });
    await assert.rejects(checkEndpoint('[::1]:80', '--http-endpoint'), {
      message: `${usage('[::1]:80')}: the host must be empty, an IP address (IPv6 without brackets) or a host name`,
    });
    // The resolver's code depends on the machine (ENOTFOUND, EAI_AGAIN offline).
    await assert.rejects(checkEndpoint('nowhere.invalid:80', 'HTTP_ENDPOINT'), {
      message:
        /^HTTP_ENDPOINT: "nowhere\.invalid:80" is not host:port, e\.g\. "127\.0\.0\.1:51516" or ":51516": the host "nowhere\.invalid" does not resolve \(E[A-Z_]+\)$/,
    });
  });

  it('--kubeconfig loaded before anything starts: readable, a kubeconfig, a cluster the client will talk to', async () => {
    await assert.rejects(checkKubeconfig(join(dir, 'none'), '--kubeconfig'), {
      message: `--kubeconfig: cannot read kubeconfig "${join(dir, 'none')}" (ENOENT)`,
    });
    const broken = file('broken.kc', 'clusters: [\n');
    await assert.rejects(checkKubeconfig(broken, '--kubeconfig'), {
      message: `--kubeconfig: "${broken}" is not a kubeconfig: unexpected end of the stream within a flow collection (2:1)…`,
    });
    const empty = file('empty.kc', 'apiVersion: v1\nkind: Config\n');
    await assert.rejects(checkKubeconfig(empty, 'KUBECONFIG'), {
      message: `KUBECONFIG: "${empty}" names no cluster to use: it sets no current-context`,
    });
    const http = file(
      'http.kc',
      'apiVersion: v1\nclusters: [{name: c, cluster: {server: "http://10.0.0.1:8080"}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\ncurrent-context: x\n',
    );
    await assert.rejects(checkKubeconfig(http, '--kubeconfig'), {
      message: `--kubeconfig: "${http}": cluster "c" is served over plain HTTP ("http://10.0.0.1:8080"), which the Kubernetes client refuses unless insecure-skip-tls-verify is set`,
    });
    await checkKubeconfig(
      file('https.kc', readFileSync(http, 'utf8').replace('http:', 'https:')),
      '--kubeconfig',
    );
  });
});
