import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { GPUFAULT_CRD, parseGpuFault } from '../../src/model/fault/resource.js';
import { totalsOf } from '../../src/model/fault/status.js';
import { kubectl, mustKubectl, TEST_NODE, testCluster } from '../support/cluster.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/**
 * The GpuFault CRD on the real API server: installed by `cluster up`, its schema and CEL rules refusing
 * what the plugin's parser refuses, with the same words, and `fakegpu fault` against it.
 */

const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');

/** A node no plugin serves: objects the tests create here must not fault a real one. */
const NOWHERE = 'gpufault-test-nowhere';

function fault(name: string, spec: object): string {
  return JSON.stringify({ apiVersion: 'fakegpu.dev/v1alpha1', kind: 'GpuFault', metadata: { name }, spec });
}

describe('GpuFault on the API server', () => {
  let e: Exports;
  const created: string[] = [];
  before(async () => {
    e = await testCluster();
  });
  after(() => {
    if (created.length) kubectl(e, ['delete', 'gpufault', '--ignore-not-found', ...created]);
  });

  const fakegpu = (...args: string[]): { code: number | null; stdout: string; stderr: string } => {
    const r = spawnSync(process.execPath, [bin, ...args], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, KUBECONFIG: e.KUBECONFIG, PATH: e.PATH },
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  it('is established by cluster up, with its short name', () => {
    assert.equal(
      mustKubectl(e, [
        'get',
        'crd',
        GPUFAULT_CRD,
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Established")].status}',
      ]),
      'True',
    );
    assert.match(
      mustKubectl(e, ['api-resources', '--api-group=fakegpu.dev']),
      /^gpufaults\s+gf\s+fakegpu\.dev\/v1alpha1\s+false\s+GpuFault$/m,
    );
  });

  it('accepts a valid fault, defaults its seed, and the plugin’s parser reads it back', () => {
    created.push('it-valid');
    mustKubectl(
      e,
      ['create', '-f', '-'],
      fault('it-valid', {
        nodeSelector: {
          matchLabels: { 'kubernetes.io/hostname': NOWHERE },
          matchExpressions: [{ key: 'fakegpu.dev/pool', operator: 'NotIn', values: ['a'] }],
        },
        fraction: '0.25',
        fault: { type: 'Xid', xid: 94, gpuInstanceId: 7, computeInstanceId: 0 },
        start: '2030-01-01T00:00:00Z',
        // An hour after start: the API server compares the times, not the text.
        repair: '2030-01-01T02:00:00+01:00',
      }),
    );
    const stored: unknown = JSON.parse(mustKubectl(e, ['get', 'gf', 'it-valid', '-o', 'json']));
    const f = parseGpuFault(stored);
    assert.equal(f.spec.seed, 0);
    assert.equal(f.metadata.generation, 1);
  });

  it('refuses each bad fault with its schema or CEL message', () => {
    const ok = { nodeName: NOWHERE, fault: { type: 'Xid', xid: 79 } };
    const cases: [string, object, RegExp][] = [
      [
        'nodeName and nodeSelector',
        { ...ok, nodeSelector: {} },
        /give exactly one of nodeName and nodeSelector/,
      ],
      ['neither', { fault: { type: 'GpuLost' } }, /give exactly one of nodeName and nodeSelector/],
      [
        'xid 0',
        { ...ok, fault: { type: 'Xid', xid: 0 } },
        /spec\.fault\.xid: Invalid value: 0: spec\.fault\.xid in body should be greater than or equal to 1/,
      ],
      [
        'xid 1000',
        { ...ok, fault: { type: 'Xid', xid: 1000 } },
        /spec\.fault\.xid in body should be less than or equal to 999/,
      ],
      [
        'Xid without xid',
        { ...ok, fault: { type: 'Xid' } },
        /xid is required with type Xid and allowed only with it/,
      ],
      [
        'xid with another type',
        { ...ok, fault: { type: 'GpuLost', xid: 79 } },
        /xid is required with type Xid and allowed only with it/,
      ],
      [
        'gpuInstanceId without computeInstanceId',
        { ...ok, fault: { type: 'Xid', xid: 94, gpuInstanceId: 1 } },
        /give both gpuInstanceId and computeInstanceId, or neither/,
      ],
      [
        'a MIG device on a fault other than Xid',
        { ...ok, fault: { type: 'GpuLost', gpuInstanceId: 1, computeInstanceId: 0 } },
        /gpuInstanceId and computeInstanceId are allowed only with type Xid/,
      ],
      [
        'an ECC count on an XID',
        { ...ok, fault: { type: 'Xid', xid: 79, count: 2 } },
        /count is allowed only with types EccSingleBit and EccDoubleBit/,
      ],
      [
        'two device choices',
        { ...ok, devices: ['gpu-0'], count: 1 },
        /give at most one of devices, indexes, count and fraction/,
      ],
      [
        'repair before start',
        { ...ok, start: '2030-01-01T01:00:00Z', repair: '2030-01-01T00:00:00Z' },
        /repair must be after start/,
      ],
      ['fraction 0', { ...ok, fraction: '0' }, /spec\.fraction in body should match/],
      ['a time without a zone', { ...ok, start: '2030-01-01T00:00:00' }, /spec\.start in body should match/],
      [
        'In without values',
        { nodeSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] }, fault: { type: 'GpuLost' } },
        /values must be given for In and NotIn, and only for them/,
      ],
      [
        'an unknown type',
        { ...ok, fault: { type: 'Melted' } },
        /spec\.fault\.type: Unsupported value: "Melted"/,
      ],
    ];
    for (const [name, spec, message] of cases) {
      const r = kubectl(e, ['create', '--dry-run=server', '-f', '-'], fault('it-bad', spec));
      assert.notEqual(r.code, 0, `${name}: accepted`);
      assert.match(r.err, message, name);
      // The plugin refuses it too (the CEL rules are in its parser).
      assert.throws(() => parseGpuFault(JSON.parse(fault('it-bad', { seed: 0, ...spec }))), name);
    }
  });

  it('refuses a changed spec and takes a status patch', () => {
    created.push('it-immutable');
    mustKubectl(
      e,
      ['create', '-f', '-'],
      fault('it-immutable', { nodeName: NOWHERE, fault: { type: 'Xid', xid: 79 } }),
    );
    const change = kubectl(e, [
      'patch',
      'gf',
      'it-immutable',
      '--type',
      'merge',
      '-p',
      '{"spec":{"fault":{"xid":80}}}',
    ]);
    assert.notEqual(change.code, 0);
    assert.match(change.err, /spec is immutable: delete the fault and create a new one/);
    const status = kubectl(e, [
      'patch',
      'gf',
      'it-immutable',
      '--subresource',
      'status',
      '--type',
      'merge',
      '-p',
      JSON.stringify({
        status: {
          nodes: {
            [NOWHERE]: {
              devices: [
                {
                  name: 'gpu-0',
                  taint: { key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' },
                  publishedAt: '2030-01-01T00:00:00Z',
                },
              ],
              observedGeneration: 1,
            },
          },
          writers: {
            [NOWHERE]: { nodes: 1, devices: 1 },
            'fleet:all': { nodes: 50_000, devices: 400_000, unlistedNodes: 49_900 },
          },
          hits: 400_001,
          nodesHit: 50_001,
          unlistedNodes: 49_900,
        },
      }),
    ]);
    assert.equal(status.code, 0, status.err);
    const f = parseGpuFault(JSON.parse(mustKubectl(e, ['get', 'gf', 'it-immutable', '-o', 'json'])));
    assert.equal(f.status?.nodes?.[NOWHERE]?.devices[0]?.taint?.value, '79');
    // Kept, not pruned: the CRD's schema has the counts.
    assert.deepEqual(totalsOf(f), { hits: 400_001, nodesHit: 50_001, unlistedNodes: 49_900 });
    const { hits, nodesHit, unlistedNodes } = f.status ?? {};
    assert.deepEqual([hits, nodesHit, unlistedNodes], [400_001, 50_001, 49_900]);
  });

  it('fault inject refuses a node the cluster lacks, in one line; inject, list and clear work', () => {
    const nope = fakegpu('fault', 'inject', '--node', 'gpufault-no-such-node', '--xid', '79');
    assert.deepEqual(nope, {
      code: 1,
      stdout: '',
      stderr: 'fakegpu: --node-name: there is no node "gpufault-no-such-node" in the cluster\n',
    });
    // Starting tomorrow: nothing on the node acts on it within this test.
    const inject = fakegpu(
      'fault',
      'inject',
      '--node',
      TEST_NODE,
      '--xid',
      '79',
      '--device',
      'gpu-0',
      '--start',
      '+24h',
    );
    assert.equal(inject.code, 0, inject.stderr);
    const name = inject.stdout.trim();
    created.push(name);
    assert.match(name, new RegExp(`^xid-79-${TEST_NODE}-[a-z0-9]{5}$`));
    const list = fakegpu('fault', 'list');
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^NAME\s+FAULT\s+TARGET\s+START\s+REPAIR\s+HITS\s+NODES$/m);
    assert.match(
      list.stdout,
      new RegExp(`^${name}\\s+Xid 79\\s+${TEST_NODE}: gpu-0\\s+\\d{4}-.*Z\\s+-\\s+0\\s+0$`, 'm'),
    );
    const selector = fakegpu(
      'fault',
      'inject',
      '--selector',
      'a=b',
      '--xid',
      '79',
      '--count',
      '1',
      '--start',
      '+1h',
      '--repair',
      '+2h',
      '--name',
      'it-cli-selector',
    );
    assert.equal(selector.code, 0, selector.stderr);
    created.push('it-cli-selector');
    const clear = fakegpu('fault', 'clear', name, 'it-cli-selector');
    assert.deepEqual(clear, { code: 0, stdout: `${name}\nit-cli-selector\n`, stderr: '' });
    assert.notEqual(kubectl(e, ['get', 'gf', name]).code, 0, 'deleted');
  });
});
