import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { crdText, readCrd, type Crd, type Schema } from '../support/crd.js';
import { crdNames } from '../../src/local-cluster/crds.js';
import { REPO_ROOT } from '../../src/process/repo.js';

/**
 * NVIDIA's ComputeDomain CRDs as fakegpu ships them: the chart's copies identical, and the schema
 * holding the fields, defaults, enums and rules of NVIDIA's v1beta1, which workloads written for
 * NVIDIA's driver rely on. The API server's verdicts are test/integration/computedomain-crd.test.ts.
 */

const root = REPO_ROOT;
const GROUP = 'resource.nvidia.com';

const text = crdText;

const crd = (file: string): Crd => readCrd(file);

function at(s: Schema, ...path: string[]): Schema {
  let cur = s;
  for (const p of path) {
    const next = p === '[]' ? cur.items : cur.properties?.[p];
    assert.ok(next, `schema has ${path.join('.')}`);
    cur = next;
  }
  return cur;
}

/** The one version, v1beta1, served and stored, as NVIDIA's driver has it (no conversion to keep). */
function v1beta1(c: Crd): Crd['spec']['versions'][number] {
  assert.equal(c.spec.versions.length, 1);
  const [v] = c.spec.versions;
  assert.ok(v);
  assert.equal(v.name, 'v1beta1');
  assert.ok(v.served && v.storage);
  return v;
}

function names(c: Crd, kind: string, plural: string): void {
  assert.equal(c.apiVersion, 'apiextensions.k8s.io/v1');
  assert.equal(c.kind, 'CustomResourceDefinition');
  assert.equal(c.metadata.name, `${plural}.${GROUP}`);
  assert.equal(c.spec.group, GROUP);
  assert.equal(c.spec.scope, 'Namespaced');
  // NVIDIA's CRDs have no short names: one here would be a name that fails on a real cluster.
  assert.deepEqual(c.spec.names, {
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
  });
}

/** A node's entry, in a ComputeDomain's status or a clique's daemons: `key` names the node. */
function nodeEntry(list: Schema, key: string): void {
  assert.equal(list.type, 'array');
  assert.equal(list['x-kubernetes-list-type'], 'map');
  assert.deepEqual(list['x-kubernetes-list-map-keys'], [key]);
  const item = at(list, '[]');
  assert.deepEqual(item.required, [key, 'ipAddress', 'cliqueID']);
  assert.deepEqual(
    Object.keys(item.properties ?? {}).sort(),
    [key, 'cliqueID', 'index', 'ipAddress', 'status'].sort(),
  );
  for (const k of [key, 'ipAddress', 'cliqueID']) assert.equal(at(item, k).type, 'string');
  assert.equal(at(item, 'index').type, 'integer');
  assert.deepEqual(at(item, 'status').enum, ['Ready', 'NotReady']);
  assert.equal(at(item, 'status').default, 'NotReady');
}

describe('the ComputeDomain CRDs', () => {
  for (const file of ['computedomain.yaml', 'computedomainclique.yaml']) {
    it(`${file} is byte-identical in the Helm chart, which installs crds/ before its templates`, () => {
      assert.equal(readFileSync(join(root, 'deploy', 'helm', 'fakegpu', 'crds', file), 'utf8'), text(file));
    });
  }

  it('are all waited for by cluster up, with the GpuFault CRD, by the names in their files', () => {
    assert.deepEqual(crdNames(join(root, 'deploy', 'crds')), [
      'computedomains.resource.nvidia.com',
      'computedomaincliques.resource.nvidia.com',
      'gpufaults.fakegpu.dev',
    ]);
  });

  it('ComputeDomain: namespaced v1beta1 with a status subresource and NVIDIA’s spec', () => {
    const c = crd('computedomain.yaml');
    names(c, 'ComputeDomain', 'computedomains');
    const v = v1beta1(c);
    assert.deepEqual(v.subresources, { status: {} });
    assert.equal(v.additionalPrinterColumns, undefined);
    const s = v.schema.openAPIV3Schema;
    assert.deepEqual(Object.keys(s.properties ?? {}).sort(), [
      'apiVersion',
      'kind',
      'metadata',
      'spec',
      'status',
    ]);
    const spec = at(s, 'spec');
    assert.deepEqual(spec.required, ['channel']);
    assert.deepEqual(spec['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'A computeDomain.spec is immutable' },
    ]);
    assert.deepEqual(Object.keys(spec.properties ?? {}).sort(), ['channel', 'numNodes']);
    const numNodes = at(spec, 'numNodes');
    assert.deepEqual([numNodes.type, numNodes.minimum, numNodes.default], ['integer', 0, 0]);
    const channel = at(spec, 'channel');
    assert.deepEqual(channel.required, ['resourceClaimTemplate']);
    assert.deepEqual(at(channel, 'resourceClaimTemplate').required, ['name']);
    assert.equal(at(channel, 'resourceClaimTemplate', 'name').type, 'string');
    assert.deepEqual(at(channel, 'allocationMode').enum, ['All', 'Single']);
    assert.equal(at(channel, 'allocationMode').default, 'Single');
    const status = at(s, 'status');
    assert.deepEqual(status.required, ['status']);
    assert.deepEqual(at(status, 'status').enum, ['Ready', 'NotReady']);
    assert.equal(at(status, 'status').default, 'NotReady');
    nodeEntry(at(status, 'nodes'), 'name');
  });

  it('ComputeDomainClique: namespaced v1beta1, daemons at the top level, no spec, status or subresource', () => {
    const c = crd('computedomainclique.yaml');
    names(c, 'ComputeDomainClique', 'computedomaincliques');
    const v = v1beta1(c);
    assert.equal(v.subresources, undefined);
    const s = v.schema.openAPIV3Schema;
    assert.deepEqual(Object.keys(s.properties ?? {}).sort(), ['apiVersion', 'daemons', 'kind', 'metadata']);
    nodeEntry(at(s, 'daemons'), 'nodeName');
  });
});
