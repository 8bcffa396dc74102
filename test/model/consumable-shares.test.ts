import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { decimalQuantity } from '../../src/kube/types/quantity.js';
import {
  parseConsumableShares,
  withConsumableShares,
  type ConsumableShares,
} from '../../src/model/device/consumable-shares.js';
import { gatesWith } from '../../src/model/feature-gates/gates.js';
import { renderSlices } from '../../src/model/render.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { devicesOf, RENDER_OPTIONS } from '../support/render.js';
import { apiViolations } from '../support/api-limits.js';
import { PRESETS } from '../../src/model/preset/index.js';

const ON = gatesWith({ ConsumableShares: true });
const refusal = (text: string | undefined, gates = ON): string => {
  try {
    parseConsumableShares(text, gates);
  } catch (e) {
    return (e as Error).message;
  }
  return 'accepted';
};
const invalid = (v: string) =>
  `--consumable-shares: invalid value for --consumable-shares: ${JSON.stringify(v)} (must be 'disabled', 'memory', 'unlimited', or a positive integer)`;

/** NVIDIA v0.5.0 cmd/gpu-kubelet-plugin/main.go validateCLIFlags. */
describe('--consumable-shares', () => {
  it('takes disabled, memory, unlimited and positive integers as strconv.Atoi reads them', () => {
    assert.equal(parseConsumableShares(undefined, gatesWith({})), 'disabled');
    assert.equal(parseConsumableShares('disabled', gatesWith({})), 'disabled');
    assert.equal(parseConsumableShares('memory', ON), 'memory');
    assert.equal(parseConsumableShares('unlimited', ON), 'unlimited');
    assert.deepEqual(parseConsumableShares('4', ON), { shares: 4n });
    assert.deepEqual(parseConsumableShares('+007', ON), { shares: 7n });
  });

  it('any value but disabled needs the gate, checked first, in NVIDIA words', () => {
    const msg =
      '--consumable-shares: --consumable-shares requires feature gate ConsumableShares to be enabled';
    for (const v of ['memory', 'unlimited', '4', '0', '', 'bogus'])
      assert.equal(refusal(v, gatesWith({})), msg, v);
  });

  it('refuses zero, negatives, spaces, non-numbers and int64 overflow with NVIDIA message', () => {
    for (const v of ['0', '-3', ' 4', '4 ', '', 'Memory', '0x10', '1.5', '9223372036854775808'])
      assert.equal(refusal(v), invalid(v), v);
    assert.deepEqual(parseConsumableShares('9223372036854775807', ON), { shares: 9223372036854775807n });
  });
});

const fixture = JSON.parse(
  readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'consumable-shares', 'dgx-h100.json'), 'utf8'),
) as Record<string, Record<string, unknown>>;

function rendered(mode: ConsumableShares, dynamicMig = false) {
  const list = renderSlices(resolveProfile('dgx-h100'), {
    ...RENDER_OPTIONS,
    dynamicMig,
    gates: gatesWith({ ConsumableShares: true, DynamicMIG: dynamicMig }),
    consumableShares: mode,
  });
  return new Map(devicesOf(list).map((d) => [d.name, d]));
}

/** What applyConsumableShares (NVIDIA v0.5.0 consumable_shares.go) publishes, against a hand-written fragment. */
describe('consumable shares published', () => {
  const cases: [string, ConsumableShares, boolean][] = [
    ['memory', 'memory', false],
    ['unlimited', 'unlimited', false],
    ['4', { shares: 4n }, false],
    ['dynamic-mig unlimited', 'unlimited', true],
  ];
  for (const [key, mode, dynamicMig] of cases)
    it(`dgx-h100, ${key}: as NVIDIA's table says`, () => {
      const devices = rendered(mode, dynamicMig);
      const want = fixture[key] ?? {};
      for (const [name, expected] of Object.entries(want)) {
        const d = devices.get(name);
        assert.ok(d, name);
        assert.deepEqual(
          { allowMultipleAllocations: d.allowMultipleAllocations, capacity: d.capacity },
          expected,
          name,
        );
      }
      // Every device of the node takes shares, not only the ones the fragment shows.
      assert.ok([...devices.values()].every((d) => d.allowMultipleAllocations === true));
    });

  it('disabled publishes exactly what it did before', () => {
    const off = rendered('disabled');
    const plain = renderSlices(resolveProfile('dgx-h100'), RENDER_OPTIONS);
    assert.deepEqual([...off.values()], devicesOf(plain));
    assert.ok([...off.values()].every((d) => d.allowMultipleAllocations === undefined));
  });

  it('memory rounds down to whole MiB; a device without memory only gets allowMultipleAllocations', () => {
    const d = withConsumableShares({ name: 'x', capacity: { memory: { value: '1537Ki' } } }, 'memory');
    assert.deepEqual(d.capacity?.['memory'], {
      value: '1Mi',
      requestPolicy: { default: '1Mi', validRange: { min: '1Mi', max: '1Mi', step: '1Mi' } },
    });
    assert.deepEqual(withConsumableShares({ name: 'y' }, { shares: 2n }), {
      name: 'y',
      allowMultipleAllocations: true,
    });
  });

  it("N shares print as Go's DecimalSI quantities", () => {
    assert.deepEqual([1n, 4n, 999n, 1000n, 1500n, 2000000n, 9223372036854775807n].map(decimalQuantity), [
      '1',
      '4',
      '999',
      '1k',
      '1500',
      '2M',
      '9223372036854775807',
    ]);
  });

  it('static MIG devices take shares and keep their other capacities', () => {
    const profile = resolveProfile(join(REPO_ROOT, 'test', 'fixtures', 'profiles', 'dgx-a100-mig.yaml'));
    const opts = { ...RENDER_OPTIONS, gates: ON };
    const plain = devicesOf(renderSlices(profile, opts));
    const shared = devicesOf(renderSlices(profile, { ...opts, consumableShares: { shares: 2n } }));
    assert.equal(shared.length, plain.length);
    for (const [i, d] of shared.entries()) {
      const before = plain[i];
      assert.ok(before && d.name.includes('-mig-'));
      assert.equal(d.allowMultipleAllocations, true);
      const { memory, shares, ...rest } = d.capacity ?? {};
      const { memory: m0, ...rest0 } = before.capacity ?? {};
      assert.deepEqual(rest, rest0);
      assert.equal(memory?.value, m0?.value);
      assert.equal(shares?.value, '2');
    }
  });

  it('every preset, plain and dynamic MIG, with N shares stays within the v1 API limits', () => {
    const a100 = resolveProfile(join(REPO_ROOT, 'test', 'fixtures', 'profiles', 'dgx-a100-mig.yaml'));
    const cases = [...PRESETS.map((p) => resolveProfile(p.name)), a100].flatMap((profile) =>
      // A static layout cannot be combined with dynamic MIG.
      (profile === a100 ? [false] : [false, true]).map((dynamicMig) => ({ profile, dynamicMig })),
    );
    for (const { profile, dynamicMig } of cases) {
      const list = renderSlices(profile, {
        ...RENDER_OPTIONS,
        dynamicMig,
        gates: gatesWith({ ConsumableShares: true, DynamicMIG: dynamicMig }),
        consumableShares: { shares: 8n },
      });
      assert.deepEqual(apiViolations(list.items), [], `${profile.name} ${String(dynamicMig)}`);
    }
  });
});
