import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { crdNames } from '../../src/local-cluster/crds.js';
import { kubectl, mustKubectl, testCluster } from '../support/cluster.js';

/**
 * NVIDIA's ComputeDomain and ComputeDomainClique CRDs on the real API server, installed by `cluster up`:
 * what a workload written for NVIDIA's driver creates is accepted, with NVIDIA's defaults, and what
 * NVIDIA's schema refuses is refused, with the API server's words for it.
 */

/** The objects are namespaced; nothing here runs, so the default namespace does. */
const NS = 'default';
const API = 'resource.nvidia.com/v1beta1';

function computeDomain(name: string, spec: object): string {
  return JSON.stringify({ apiVersion: API, kind: 'ComputeDomain', metadata: { name, namespace: NS }, spec });
}

function clique(name: string, daemons: object[]): string {
  return JSON.stringify({
    apiVersion: API,
    kind: 'ComputeDomainClique',
    metadata: { name, namespace: NS },
    daemons,
  });
}

interface ComputeDomain {
  spec: {
    numNodes?: number;
    channel: { resourceClaimTemplate: { name: string }; allocationMode?: string };
  };
  status?: {
    status: string;
    nodes?: { name: string; ipAddress: string; cliqueID: string; index?: number; status?: string }[];
  };
}

interface ComputeDomainClique {
  daemons?: { nodeName: string; ipAddress: string; cliqueID: string; index?: number; status?: string }[];
}

const CLIQUE_ID = '11111111-2222-3333-4444-555555555555.1';

describe('ComputeDomain CRDs on the API server', () => {
  let e: Exports;
  const domains: string[] = [];
  const cliques: string[] = [];
  before(async () => {
    e = await testCluster();
  });
  after(() => {
    if (domains.length) kubectl(e, ['delete', '-n', NS, 'computedomains', '--ignore-not-found', ...domains]);
    if (cliques.length)
      kubectl(e, ['delete', '-n', NS, 'computedomaincliques', '--ignore-not-found', ...cliques]);
  });

  const get = (resource: string, name: string): unknown =>
    JSON.parse(mustKubectl(e, ['get', '-n', NS, resource, name, '-o', 'json']));

  it('are established by cluster up, namespaced, under NVIDIA’s group and version', () => {
    for (const crd of ['computedomains.resource.nvidia.com', 'computedomaincliques.resource.nvidia.com']) {
      assert.ok(crdNames().includes(crd), crd);
      assert.equal(
        mustKubectl(e, [
          'get',
          'crd',
          crd,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Established")].status}',
        ]),
        'True',
        crd,
      );
    }
    const resources = mustKubectl(e, ['api-resources', '--api-group=resource.nvidia.com']);
    assert.match(
      resources,
      /^computedomaincliques\s+resource\.nvidia\.com\/v1beta1\s+true\s+ComputeDomainClique$/m,
    );
    assert.match(resources, /^computedomains\s+resource\.nvidia\.com\/v1beta1\s+true\s+ComputeDomain$/m);
  });

  it('accepts a minimal ComputeDomain and fills in NVIDIA’s defaults', () => {
    domains.push('it-cd-minimal');
    mustKubectl(
      e,
      ['create', '-f', '-'],
      computeDomain('it-cd-minimal', {
        channel: { resourceClaimTemplate: { name: 'it-cd-minimal-channel' } },
      }),
    );
    const cd = get('computedomain', 'it-cd-minimal') as ComputeDomain;
    assert.deepEqual(cd.spec, {
      numNodes: 0,
      channel: { resourceClaimTemplate: { name: 'it-cd-minimal-channel' }, allocationMode: 'Single' },
    });
    // No controller runs here, and a status is written only through the subresource.
    assert.equal(cd.status, undefined);
  });

  it('refuses each ComputeDomain NVIDIA’s schema refuses', () => {
    const rct = { resourceClaimTemplate: { name: 'it-cd-bad-channel' } };
    const cases: [string, object, RegExp][] = [
      [
        'allocationMode Some',
        { channel: { ...rct, allocationMode: 'Some' } },
        /spec\.channel\.allocationMode: Unsupported value: "Some": supported values: "All", "Single"/,
      ],
      ['no channel', { numNodes: 2 }, /spec\.channel: Required value/],
      [
        'a channel without a template',
        { channel: {} },
        /spec\.channel\.resourceClaimTemplate: Required value/,
      ],
      [
        'a template without a name',
        { channel: { resourceClaimTemplate: {} } },
        /spec\.channel\.resourceClaimTemplate\.name: Required value/,
      ],
      [
        'numNodes -1',
        { numNodes: -1, channel: rct },
        /spec\.numNodes in body should be greater than or equal to 0/,
      ],
    ];
    for (const [name, spec, message] of cases) {
      const r = kubectl(e, ['create', '--dry-run=server', '-f', '-'], computeDomain('it-cd-bad', spec));
      assert.notEqual(r.code, 0, `${name}: accepted`);
      assert.match(r.err, message, name);
    }
  });

  it('keeps the spec as created, with NVIDIA’s message, and takes a status only with every node’s clique', () => {
    domains.push('it-cd-immutable');
    mustKubectl(
      e,
      ['create', '-f', '-'],
      computeDomain('it-cd-immutable', {
        numNodes: 2,
        channel: { resourceClaimTemplate: { name: 'it-cd-immutable-channel' }, allocationMode: 'All' },
      }),
    );
    const patch = (p: object, ...extra: string[]): ReturnType<typeof kubectl> =>
      kubectl(e, [
        'patch',
        '-n',
        NS,
        'computedomain',
        'it-cd-immutable',
        ...extra,
        '--type',
        'merge',
        '-p',
        JSON.stringify(p),
      ]);
    const change = patch({ spec: { numNodes: 3 } });
    assert.notEqual(change.code, 0, 'a spec change accepted');
    assert.match(change.err, /A computeDomain\.spec is immutable/);
    // The rule compares values: writing what is already there is no change.
    const same = patch({ spec: { numNodes: 2 } });
    assert.equal(same.code, 0, same.err);

    const noClique = patch(
      { status: { status: 'NotReady', nodes: [{ name: 'n1', ipAddress: '10.0.0.1', index: 0 }] } },
      '--subresource',
      'status',
    );
    assert.notEqual(noClique.code, 0, 'a node without cliqueID accepted');
    assert.match(noClique.err, /status\.nodes\[0\]\.cliqueID: Required value/);

    const ok = patch(
      {
        status: {
          status: 'NotReady',
          nodes: [
            { name: 'n1', ipAddress: '10.0.0.1', cliqueID: CLIQUE_ID, index: 0, status: 'Ready' },
            { name: 'n2', ipAddress: '10.0.0.2', cliqueID: CLIQUE_ID, index: 1 },
          ],
        },
      },
      '--subresource',
      'status',
    );
    assert.equal(ok.code, 0, ok.err);
    const cd = get('computedomain', 'it-cd-immutable') as ComputeDomain;
    assert.deepEqual(
      cd.status?.nodes?.map((n) => [n.name, n.status]),
      [
        ['n1', 'Ready'],
        ['n2', 'NotReady'],
      ],
    );
    assert.equal(cd.spec.channel.allocationMode, 'All');
  });

  it('accepts a ComputeDomainClique with two daemons, defaulting their status, and refuses a node twice', () => {
    const name = `it-cd-uid.${CLIQUE_ID}`;
    cliques.push(name);
    mustKubectl(
      e,
      ['create', '-f', '-'],
      clique(name, [
        { nodeName: 'n1', ipAddress: '10.0.0.1', cliqueID: CLIQUE_ID, index: 0, status: 'Ready' },
        { nodeName: 'n2', ipAddress: '10.0.0.2', cliqueID: CLIQUE_ID, index: 1 },
      ]),
    );
    const c = get('computedomainclique', name) as ComputeDomainClique;
    assert.deepEqual(
      c.daemons?.map((d) => [d.nodeName, d.index, d.status]),
      [
        ['n1', 0, 'Ready'],
        ['n2', 1, 'NotReady'],
      ],
    );
    // No status subresource: a daemon changes its own entry with a plain write.
    mustKubectl(e, [
      'patch',
      '-n',
      NS,
      'computedomainclique',
      name,
      '--type',
      'json',
      '-p',
      JSON.stringify([{ op: 'replace', path: '/daemons/1/status', value: 'Ready' }]),
    ]);
    assert.equal((get('computedomainclique', name) as ComputeDomainClique).daemons?.[1]?.status, 'Ready');

    const twice = kubectl(
      e,
      ['create', '--dry-run=server', '-f', '-'],
      clique('it-cd-twice', [
        { nodeName: 'n1', ipAddress: '10.0.0.1', cliqueID: CLIQUE_ID, index: 0 },
        { nodeName: 'n1', ipAddress: '10.0.0.2', cliqueID: CLIQUE_ID, index: 1 },
      ]),
    );
    assert.notEqual(twice.code, 0, 'a node twice accepted');
    assert.match(twice.err, /daemons\[1\]: Duplicate value/);

    const noClique = kubectl(
      e,
      ['create', '--dry-run=server', '-f', '-'],
      clique('it-cd-no-clique', [{ nodeName: 'n1', ipAddress: '10.0.0.1' }]),
    );
    assert.notEqual(noClique.code, 0, 'a daemon without cliqueID accepted');
    assert.match(noClique.err, /daemons\[0\]\.cliqueID: Required value/);
  });
});
