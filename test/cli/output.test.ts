import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { serialize, toYaml } from '../../src/cli/output.js';

/** What fakegpu printed as YAML before it wrote YAML itself, and must still print byte for byte. */
const library = (v: unknown): string => stringify(v, { lineWidth: 0, aliasDuplicateObjects: false });

/** Characters that change how the library writes a scalar: indicators, quotes, escapes, line ends. */
const tricky = fc.constantFrom(
  ...'aZ0 9-_.:#,@&*!|>\'"%`?[]{}\n\t\\/=+()~\u0001\u00e9\u2028\u0085'.split(''),
);
const scalarText = fc.oneof(
  fc.string(),
  fc.string({ unit: tricky }),
  fc.constantFrom(
    ...['', 'null', 'True', 'FALSE', '~', '1', '-1', '0x1f', '0o7', '1e5', '1.', '.5', '.inf', '-.inf'],
    ...['.nan', '---', '--- x', '... y', '-', '?', '- a', 'a: b', 'a #b', 'a ', ' a', '%x', 'y', 'no'],
  ),
);
const value: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    scalarText,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie('value')),
    fc.dictionary(fc.oneof(scalarText, fc.constantFrom('a', 'b')), tie('value')),
  ),
})).value;

describe('YAML output', () => {
  it('is what the yaml library writes, for any JSON-like value', () => {
    fc.assert(
      fc.property(fc.oneof(fc.array(value), fc.dictionary(scalarText, value)), (v) => {
        assert.equal(toYaml(v), library(v));
      }),
      { numRuns: 3000, seed: 20261203 },
    );
  });

  it('leaves to the library what its own writing does not cover', () => {
    const shared = { a: 1 };
    for (const v of [
      [shared, shared], // an object met twice
      { a: 'two\nlines' }, // a block scalar
      { a: { '\u2028%': 1 } }, // a key quoted at the top level only
      { k: 'x'.repeat(2000) },
      { ['k'.repeat(2000)]: 1 }, // an explicit key
      [1, , 2], // eslint-disable-line no-sparse-arrays
      {},
      [],
      'text',
    ])
      assert.equal(toYaml(v), library(v), JSON.stringify(v));
  });

  it('writes an object met twice in full, never as an anchor and alias', () => {
    const shared = { int: 7 };
    assert.equal(toYaml({ a: shared, b: shared }), 'a:\n  int: 7\nb:\n  int: 7\n');
  });

  it('writes a render-shaped list as kubectl users read it', () => {
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [{ metadata: { name: 'n1-gpu' }, spec: { devices: [{ name: 'gpu-0', attributes: {} }] } }],
    };
    assert.equal(
      serialize(list, 'yaml'),
      [
        'apiVersion: v1',
        'kind: List',
        'items:',
        '  - metadata:',
        '      name: n1-gpu',
        '    spec:',
        '      devices:',
        '        - name: gpu-0',
        '          attributes: {}',
        '',
      ].join('\n'),
    );
  });
});
