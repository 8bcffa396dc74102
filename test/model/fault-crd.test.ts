import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { crdText, readCrd, type Crd, type Schema } from '../support/crd.js';
import {
  FAULT_LIMITS,
  FAULT_TYPES,
  FRACTION,
  GPUFAULT_CRD,
  GPUFAULT_KIND,
  GROUP,
  parseGpuFault,
  RFC3339,
  TAINT_EFFECTS,
  VERSION,
} from '../../src/model/fault/resource.js';
import { LIMITS, SELECTOR_OPERATORS } from '../../src/model/fault/selector.js';
import { DNS_LABEL, DNS_SUBDOMAIN, LABEL_KEY, LABEL_VALUE } from '../../src/kube/types/names.js';
import { REPO_ROOT } from '../../src/process/repo.js';

const root = REPO_ROOT;
const gpufaultText = crdText('gpufault.yaml');

const crd = (): Crd => readCrd('gpufault.yaml');

function at(s: Schema, ...path: string[]): Schema {
  let cur = s;
  for (const p of path) {
    const next = p === '[]' ? cur.items : p === '{}' ? cur.additionalProperties : cur.properties?.[p];
    assert.ok(next, `schema has ${path.join('.')}`);
    cur = next;
  }
  return cur;
}

/** The CRD's pattern is the parser's regular expression (`source` escapes a slash, YAML does not). */
function samePattern(pattern: string | undefined, re: RegExp): void {
  assert.ok(pattern !== undefined, `a pattern for ${re.source}`);
  assert.equal(new RegExp(pattern).source, re.source);
}

describe('the GpuFault CRD', () => {
  it('is byte-identical in the Helm chart, which installs crds/ before its templates', () => {
    assert.equal(
      readFileSync(join(root, 'deploy', 'helm', 'fakegpu', 'crds', 'gpufault.yaml'), 'utf8'),
      gpufaultText,
    );
  });

  it('parses as one cluster-scoped CRD with a status subresource and the printer columns', () => {
    const c = crd();
    assert.equal(c.apiVersion, 'apiextensions.k8s.io/v1');
    assert.equal(c.kind, 'CustomResourceDefinition');
    assert.equal(c.metadata.name, GPUFAULT_CRD);
    assert.equal(c.spec.group, GROUP);
    assert.equal(c.spec.scope, 'Cluster');
    assert.equal(c.spec.names.kind, GPUFAULT_KIND);
    assert.deepEqual(c.spec.names.shortNames, ['gf']);
    assert.equal(c.spec.versions.length, 1);
    const [v] = c.spec.versions;
    assert.ok(v);
    assert.equal(v.name, VERSION);
    assert.ok(v.served && v.storage);
    assert.deepEqual(v.subresources, { status: {} });
    assert.deepEqual(
      (v.additionalPrinterColumns ?? []).map((p) => p.name),
      ['Fault', 'XID', 'Node', 'Selector', 'Hits', 'Nodes', 'Start', 'Repair', 'Age'],
    );
  });

  it('bounds every list, string and map, so the API server can bound the cost of its CEL rules', () => {
    const schema = crd().spec.versions[0]?.schema.openAPIV3Schema;
    assert.ok(schema);
    const unbounded: string[] = [];
    const walk = (s: Schema, path: string): void => {
      if (s.type === 'array' && s.maxItems === undefined) unbounded.push(path);
      if (s.type === 'string' && s.maxLength === undefined && s.enum === undefined) unbounded.push(path);
      if (s.additionalProperties && s.maxProperties === undefined) unbounded.push(path);
      for (const [k, p] of Object.entries(s.properties ?? {})) walk(p, `${path}.${k}`);
      if (s.items) walk(s.items, `${path}[]`);
      if (s.additionalProperties) walk(s.additionalProperties, `${path}{}`);
    };
    // apiVersion and kind are the API server's to check.
    for (const k of ['spec', 'status']) walk(at(schema, k), k);
    assert.deepEqual(unbounded, []);
  });

  it('has the limits, patterns and enums the parser has', () => {
    const s = crd().spec.versions[0]?.schema.openAPIV3Schema;
    assert.ok(s);
    const spec = at(s, 'spec');
    const fault = at(spec, 'fault');
    assert.deepEqual(at(fault, 'type').enum, [...FAULT_TYPES]);
    assert.deepEqual([at(fault, 'xid').minimum, at(fault, 'xid').maximum], [1, FAULT_LIMITS.xid.max]);
    assert.equal(at(fault, 'gpuInstanceId').maximum, FAULT_LIMITS.instanceId.max);
    assert.equal(at(fault, 'computeInstanceId').maximum, FAULT_LIMITS.instanceId.max);
    assert.equal(at(fault, 'count').maximum, FAULT_LIMITS.eccCount.max);
    samePattern(at(spec, 'nodeName').pattern, DNS_SUBDOMAIN);
    assert.equal(at(spec, 'devices').maxItems, FAULT_LIMITS.gpus);
    samePattern(at(spec, 'devices', '[]').pattern, DNS_LABEL);
    assert.equal(at(spec, 'indexes').maxItems, FAULT_LIMITS.gpus);
    assert.equal(at(spec, 'indexes', '[]').maximum, FAULT_LIMITS.gpuIndex.max);
    assert.equal(at(spec, 'count').maximum, FAULT_LIMITS.gpus);
    samePattern(at(spec, 'fraction').pattern, FRACTION);
    assert.equal(at(spec, 'seed').maximum, FAULT_LIMITS.seed.max);
    assert.equal(at(spec, 'seed').default, 0);
    for (const t of ['start', 'repair']) {
      samePattern(at(spec, t).pattern, RFC3339);
      assert.equal(at(spec, t).format, 'date-time');
    }
    const sel = at(spec, 'nodeSelector');
    assert.equal(at(sel, 'matchLabels').maxProperties, LIMITS.matchLabels);
    samePattern(at(sel, 'matchLabels', '{}').pattern, LABEL_VALUE);
    assert.equal(at(sel, 'matchExpressions').maxItems, LIMITS.matchExpressions);
    samePattern(at(sel, 'matchExpressions', '[]', 'key').pattern, LABEL_KEY);
    assert.deepEqual(at(sel, 'matchExpressions', '[]', 'operator').enum, [...SELECTOR_OPERATORS]);
    assert.equal(at(sel, 'matchExpressions', '[]', 'values').maxItems, LIMITS.values);
    samePattern(at(sel, 'matchExpressions', '[]', 'values', '[]').pattern, LABEL_VALUE);
    const node = at(s, 'status', 'nodes', '{}');
    assert.equal(at(node, 'devices').maxItems, FAULT_LIMITS.statusDevices);
    assert.equal(at(node, 'message').maxLength, FAULT_LIMITS.message);
    assert.deepEqual(at(node, 'devices', '[]', 'taint', 'effect').enum, [...TAINT_EFFECTS]);
    assert.equal(at(s, 'status', 'nodes').maxProperties, FAULT_LIMITS.statusNodes);
    assert.equal(at(s, 'status', 'writers').maxProperties, FAULT_LIMITS.statusWriters);
    assert.deepEqual(at(s, 'status', 'writers', '{}').required, ['nodes', 'devices']);
  });

  it('words each CEL rule as the parser does, so the plugin reports what the API server would', () => {
    const s = crd().spec.versions[0]?.schema.openAPIV3Schema;
    assert.ok(s);
    const spec = at(s, 'spec');
    const rules = [
      ...(spec['x-kubernetes-validations'] ?? []),
      ...(at(spec, 'fault')['x-kubernetes-validations'] ?? []),
      ...(at(spec, 'nodeSelector', 'matchExpressions', '[]')['x-kubernetes-validations'] ?? []),
    ];
    const base = { nodeName: 'n1', fault: { type: 'Xid', xid: 79 } };
    // One object breaking each rule but immutability (a rule on updates, which a parser never sees).
    const breaking: Record<string, object> = {
      'give exactly one of nodeName and nodeSelector': { ...base, nodeSelector: {} },
      'give at most one of devices, indexes, count and fraction': { ...base, count: 1, fraction: '0.5' },
      'repair must be after start': {
        ...base,
        start: '2026-01-01T00:00:00Z',
        repair: '2026-01-01T00:00:00Z',
      },
      'xid is required with type Xid and allowed only with it': { ...base, fault: { type: 'Xid' } },
      'give both gpuInstanceId and computeInstanceId, or neither': {
        ...base,
        fault: { type: 'Xid', xid: 79, gpuInstanceId: 1 },
      },
      'gpuInstanceId and computeInstanceId are allowed only with type Xid': {
        ...base,
        fault: { type: 'GpuLost', gpuInstanceId: 1, computeInstanceId: 0 },
      },
      'count is allowed only with types EccSingleBit and EccDoubleBit': {
        ...base,
        fault: { type: 'GpuLost', count: 2 },
      },
      'values must be given for In and NotIn, and only for them': {
        nodeSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] },
        fault: { type: 'GpuLost' },
      },
    };
    for (const r of rules) {
      if (r.rule === 'self == oldSelf') continue;
      const spec = breaking[r.message];
      assert.ok(spec, `a test object for the rule "${r.message}"`);
      assert.throws(
        () => parseGpuFault({ metadata: { name: 'f' }, spec }),
        (e: unknown) => e instanceof Error && e.message.includes(r.message),
        r.message,
      );
    }
    assert.equal(rules.length, Object.keys(breaking).length + 1);
  });
});
