import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { z } from 'zod';
import type {
  ComputeDomain,
  ComputeDomainNode,
  DaemonEntry,
} from '../../src/model/compute-domain/resource.js';
import {
  CliqueDaemons,
  ComputeDomainSpec,
  ComputeDomainStatus,
} from '../../src/model/compute-domain/schema.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { ChartValues } from '../../src/tools/schemas/chart-values.js';
import { jsonSchema } from '../../src/tools/schemas/convert.js';
import { CHART, generatedFiles } from '../../src/tools/schemas/files.js';

const onDisk = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');

/** The generated files whose text differs from what `read` gives for their path. */
function stale(read: (path: string) => string): string[] {
  return generatedFiles()
    .filter((f) => read(f.path) !== f.text)
    .map((f) => f.path);
}

describe('the generated schemas (npm run schemas)', () => {
  it('are current on disk: the CRDs, their copies in the chart and values.schema.json', () => {
    assert.deepEqual(
      generatedFiles().map((f) => f.path),
      [
        'deploy/crds/computedomain.yaml',
        `${CHART}/crds/computedomain.yaml`,
        'deploy/crds/computedomainclique.yaml',
        `${CHART}/crds/computedomainclique.yaml`,
        'deploy/crds/gpufault.yaml',
        `${CHART}/crds/gpufault.yaml`,
        `${CHART}/values.schema.json`,
        'docs/machine-profile.md',
        'docs/feature-gates.md',
      ],
    );
    assert.deepEqual(stale(onDisk), [], 'run npm run schemas and commit what it writes');
  });

  it('describe every MachineProfile field in the reference: a description each, a default for each optional value', () => {
    const text = generatedFiles().find((f) => f.path === 'docs/machine-profile.md')?.text ?? '';
    const rows = text
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) => l.split(/(?<!\\)\|/).map((c) => c.trim()));
    assert.ok(rows.length > 50, 'a row per field');
    for (const [, field = '', type = '', required = '', , dflt = '', description = ''] of rows) {
      assert.notEqual(description, '', `${field} has no description: give it .describe() in the zod schema`);
      if (required === 'no' && type !== 'object')
        assert.notEqual(dflt, '', `${field} is optional: its description should end with "Default: …"`);
    }
    for (const field of [
      'spec.gpus[].busId',
      'spec.nics[].mtu',
      'spec.fabric.cliqueId',
      'provenance.<name>.status',
    ])
      assert.ok(
        rows.some((r) => r[1] === `\`${field}\``),
        field,
      );
    const mtu = rows.find((r) => r[1] === '`spec.nics[].mtu`');
    assert.deepEqual(mtu?.slice(2, 6), ['integer', 'no', '68 to 65535', "the model's"]);
  });

  it('find a file edited by hand stale', () => {
    const edited = `${CHART}/crds/gpufault.yaml`;
    const read = (p: string): string =>
      p === edited ? onDisk(p).replace('maxLength: 253', 'maxLength: 254') : onDisk(p);
    assert.notEqual(read(edited), onDisk(edited));
    assert.deepEqual(stale(read), [edited]);
  });

  it("accept the chart's own values.yaml", () => {
    const r = ChartValues.safeParse(parse(onDisk(`${CHART}/values.yaml`)));
    assert.ok(r.success, r.error?.message);
  });

  it('accept the ComputeDomain shapes fakegpu writes', () => {
    // Compile-time: what the controller and the daemons write is input these schemas take.
    const spec = (s: ComputeDomain['spec']): z.input<typeof ComputeDomainSpec> => s;
    type StatusNode = NonNullable<z.input<typeof ComputeDomainStatus>['nodes']>[number];
    const node = (n: ComputeDomainNode): StatusNode => n;
    const daemon = (d: DaemonEntry): z.input<typeof CliqueDaemons> => [d];
    const entry = { ipAddress: '10.0.0.1', cliqueID: '', index: -1, status: 'Ready' } as const;
    assert.ok(
      ComputeDomainSpec.safeParse(spec({ channel: { resourceClaimTemplate: { name: 't' } } })).success,
    );
    assert.ok(
      ComputeDomainStatus.safeParse({ status: 'Ready', nodes: [node({ name: 'n', ...entry })] }).success,
    );
    assert.ok(CliqueDaemons.safeParse(daemon({ nodeName: 'n', ...entry })).success);
  });
});

describe('a zod schema as a CRD schema', () => {
  it('merges the extras in at their paths, and refuses a path the schema does not have', () => {
    const s = z.object({ list: z.array(z.object({ k: z.string().max(3) })).max(2) });
    assert.deepEqual(jsonSchema(s, 'crd', { list: { 'x-kubernetes-list-type': 'set' } }, 't.yaml'), {
      type: 'object',
      required: ['list'],
      properties: {
        list: {
          type: 'array',
          'x-kubernetes-list-type': 'set',
          maxItems: 2,
          items: { type: 'object', required: ['k'], properties: { k: { type: 'string', maxLength: 3 } } },
        },
      },
    });
    assert.throws(() => jsonSchema(s, 'crd', { 'list[].x': { format: 'int64' } }, 't.yaml'), {
      message: 't.yaml: list[].x: is in the table of extras but not in the schema',
    });
  });

  it('leaves out what a structural schema forbids and zod writes for nothing', () => {
    const s = z.strictObject({ n: z.number().int(), m: z.record(z.string(), z.string()) });
    assert.deepEqual(jsonSchema(s, 'crd', {}, 't.yaml'), {
      type: 'object',
      required: ['n', 'm'],
      properties: { n: { type: 'integer' }, m: { type: 'object', additionalProperties: { type: 'string' } } },
    });
    // Helm's JSON Schema keeps the refusal of unknown keys.
    assert.equal(jsonSchema(s, 'helm', {}, 'values.schema.json').additionalProperties, false);
  });

  it('takes a union of enums as one enum, and refuses any other union with its path', () => {
    const e = z.object({ e: z.union([z.literal('a'), z.enum(['b', 'c'])]) });
    assert.deepEqual(jsonSchema(e, 'crd', {}, 't.yaml').properties, {
      e: { type: 'string', enum: ['a', 'b', 'c'] },
    });
    const u = z.object({ spec: z.object({ u: z.union([z.string(), z.number()]) }) });
    assert.throws(() => jsonSchema(u, 'crd', {}, 't.yaml'), {
      message:
        "t.yaml: spec.u: anyOf is not allowed in a CRD's structural schema; express it in zod or the table",
    });
  });
});
