import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakegpuError } from '../../src/errors.js';
import {
  faultPhase,
  parseGpuFault,
  parseTime,
  type GpuFault,
  type GpuFaultSpec,
  type NodeFaultStatus,
} from '../../src/model/fault/resource.js';
import { faultHash, matchesNode, selectTargets, type FaultGpu } from '../../src/model/fault/select.js';
import { formatSelector, parseSelector, selectorMatches } from '../../src/model/fault/selector.js';
import {
  entryUnchanged,
  fleetWriter,
  hitsOf,
  LISTED_DEVICES,
  LISTED_NODES,
  invalidPatch,
  nodesStatusPatch,
  nodeStatusPatch,
  summaryPatch,
  totalsOf,
} from '../../src/model/fault/status.js';
import { mergePatch } from '../support/fake-faults.js';

const fault = (spec: object, extra: object = {}): GpuFault =>
  parseGpuFault({
    apiVersion: 'fakegpu.dev/v1alpha1',
    kind: 'GpuFault',
    metadata: { name: 'f' },
    spec,
    ...extra,
  });

const spec = (s: object): GpuFaultSpec => fault(s).spec;

/** One line, exactly this. */
function refused(obj: unknown, message: string): void {
  assert.throws(
    () => parseGpuFault(obj),
    (e: unknown) => {
      assert.ok(e instanceof FakegpuError, `not a FakegpuError: ${String(e)}`);
      assert.equal(e.message, message);
      return true;
    },
  );
}

describe('parsing a GpuFault', () => {
  const ok = { nodeName: 'n1', fault: { type: 'Xid', xid: 79 } };
  const obj = (s: object): object => ({ metadata: { name: 'f' }, spec: s });

  it('takes a valid fault and defaults the seed', () => {
    const f = fault(ok);
    assert.equal(f.spec.seed, 0);
    assert.deepEqual(f.spec.fault, { type: 'Xid', xid: 79 });
    assert.equal(f.status, undefined);
  });

  it('takes every field the CRD has', () => {
    const f = fault(
      {
        nodeSelector: {
          matchLabels: { 'fakegpu.dev/pool': 'h100' },
          matchExpressions: [
            { key: 'zone', operator: 'In', values: ['a', 'b'] },
            { key: 'drain', operator: 'DoesNotExist' },
          ],
        },
        fraction: '0.01',
        seed: 7,
        fault: { type: 'EccDoubleBit', count: 3 },
        start: '2026-01-02T15:04:05+02:00',
        repair: '2026-01-02T15:04:05.5Z',
      },
      {
        status: {
          nodes: {
            n1: {
              devices: [
                {
                  name: 'gpu-0',
                  taint: { key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' },
                  publishedAt: '2026-01-02T15:04:06Z',
                },
              ],
              observedGeneration: 1,
            },
          },
          hits: 1,
        },
      },
    );
    assert.equal(f.spec.fraction, '0.01');
    assert.equal(f.status?.nodes?.['n1']?.devices[0]?.taint?.effect, 'NoSchedule');
  });

  it('reads a status it cannot parse as none: it is ours to rewrite, not a reason to drop the fault', () => {
    assert.equal(fault(ok, { status: { nodes: 'garbage' } }).status, undefined);
  });

  it('refuses bad faults in one line naming the object, the field, the value and what is allowed', () => {
    refused(
      obj({ ...ok, fault: { type: 'Xid', xid: 0 } }),
      'GpuFault f: spec.fault.xid: Too small: expected number to be >=1 (got 0)',
    );
    refused(
      obj({ ...ok, fault: { type: 'Xid', xid: 1000 } }),
      'GpuFault f: spec.fault.xid: Too big: expected number to be <=999 (got 1000)',
    );
    refused(
      obj({ ...ok, fault: { type: 'Xid', xids: [79] } }),
      'GpuFault f: spec.fault: unknown field "xids"; allowed fields: type, xid, gpuInstanceId, computeInstanceId, count [and 1 more problem(s)]',
    );
    refused(
      obj({ ...ok, fault: { type: 'Melted' } }),
      'GpuFault f: spec.fault.type: Invalid option: expected one of "Xid"|"EccSingleBit"|"EccDoubleBit"|"GpuLost"|"Unmonitored" (got "Melted")',
    );
    refused(
      obj({ fault: { type: 'GpuLost' } }),
      'GpuFault f: spec: give exactly one of nodeName and nodeSelector (got {"fault":{"type":"GpuLost"}})',
    );
    refused(
      obj({ ...ok, fault: { type: 'Xid', xid: 79, gpuInstanceId: 1 } }),
      'GpuFault f: spec.fault.computeInstanceId: give both gpuInstanceId and computeInstanceId, or neither (got nothing)',
    );
    refused(
      obj({ ...ok, fraction: '0' }),
      'GpuFault f: spec.fraction: must be a decimal in (0, 1], e.g. "0.01" (got "0")',
    );
    refused(
      obj({ ...ok, fraction: '1.5' }),
      'GpuFault f: spec.fraction: must be a decimal in (0, 1], e.g. "0.01" (got "1.5")',
    );
    refused(
      obj({ ...ok, start: '2026-01-02T15:04:05' }),
      'GpuFault f: spec.start: must be an RFC 3339 time with a zone, e.g. "2026-01-02T15:04:05Z" (got "2026-01-02T15:04:05")',
    );
    refused(
      obj({ ...ok, repair: '2026-02-30T00:00:00Z' }),
      'GpuFault f: spec.repair: must be an RFC 3339 time with a zone, e.g. "2026-01-02T15:04:05Z" (got "2026-02-30T00:00:00Z")',
    );
    refused(
      obj({ ...ok, devices: ['gpu-1', 'gpu-1'] }),
      'GpuFault f: spec.devices: names a device twice (got ["gpu-1","gpu-1"])',
    );
    refused(
      obj({ ...ok, devices: ['GPU_1'] }),
      'GpuFault f: spec.devices[0]: must be a device name such as "gpu-3" or "gpu-0-mig-1g10gb-19-6" (got "GPU_1")',
    );
    refused(
      obj({ ...ok, indexes: [256] }),
      'GpuFault f: spec.indexes[0]: Too big: expected number to be <=255 (got 256)',
    );
    refused(
      obj({ nodeSelector: { matchLabels: { 'bad key!': 'x' } }, fault: { type: 'GpuLost' } }),
      'GpuFault f: spec.nodeSelector.matchLabels.bad key!: Invalid key in record (got "x")',
    );
    refused(null, 'GpuFault (no name): object: Invalid input: expected object, received null (got null)');
    refused(
      { metadata: {}, spec: ok },
      'GpuFault (no name): metadata.name: Invalid input: expected string, received undefined (got nothing)',
    );
    refused(
      { metadata: { name: 'f' }, apiVersion: 'fakegpu.dev/v2', spec: ok },
      'GpuFault f: apiVersion: Invalid input: expected "fakegpu.dev/v1alpha1" (got "fakegpu.dev/v2")',
    );
  });

  it('cuts a long name and a long value: one readable line', () => {
    assert.throws(
      () =>
        parseGpuFault({ metadata: { name: 'x'.repeat(300) }, spec: { ...ok, nodeName: 'n'.repeat(300) } }),
      (e: unknown) =>
        e instanceof FakegpuError &&
        !e.message.includes('\n') &&
        e.message.length < 300 &&
        e.message.startsWith(`GpuFault ${'x'.repeat(80)}…: spec.nodeName: Too big`),
    );
  });
});

describe('times and phases', () => {
  it('reads RFC 3339 times as the API server does', () => {
    assert.equal(parseTime('2026-01-02T03:04:05Z'), Date.UTC(2026, 0, 2, 3, 4, 5));
    assert.equal(parseTime('2026-01-02T03:04:05.25Z'), Date.UTC(2026, 0, 2, 3, 4, 5, 250));
    assert.equal(parseTime('2026-01-02T05:04:05+02:00'), Date.UTC(2026, 0, 2, 3, 4, 5));
    assert.equal(parseTime('2026-01-02T00:04:05-03:00'), Date.UTC(2026, 0, 2, 3, 4, 5));
    for (const bad of [
      '2026-01-02 03:04:05Z',
      '2026-01-02T03:04:05',
      '2026-13-01T00:00:00Z',
      '2026-02-29T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T00:00:60Z',
    ])
      assert.equal(parseTime(bad), null, bad);
    assert.equal(parseTime('2028-02-29T00:00:00Z'), Date.UTC(2028, 1, 29));
  });

  it('is pending before start, active until repair, repaired after; nextChangeAt says when', () => {
    const base = { nodeName: 'n1', fault: { type: 'GpuLost' } };
    const at = (iso: string): Date => new Date(iso);
    const f = fault({ ...base, start: '2026-01-01T00:00:00Z', repair: '2026-01-01T01:00:00Z' });
    assert.deepEqual(faultPhase(f, at('2025-12-31T23:59:59Z')), {
      phase: 'pending',
      nextChangeAt: at('2026-01-01T00:00:00Z'),
    });
    assert.deepEqual(faultPhase(f, at('2026-01-01T00:00:00Z')), {
      phase: 'active',
      nextChangeAt: at('2026-01-01T01:00:00Z'),
    });
    assert.deepEqual(faultPhase(f, at('2026-01-01T01:00:00Z')), { phase: 'repaired', nextChangeAt: null });
    assert.deepEqual(faultPhase(fault(base), at('2026-01-01T00:00:00Z')), {
      phase: 'active',
      nextChangeAt: null,
    });
    const repairOnly = fault({ ...base, repair: '2026-01-01T00:00:00Z' });
    assert.equal(faultPhase(repairOnly, at('2025-06-01T00:00:00Z')).phase, 'active');
    assert.equal(faultPhase(repairOnly, at('2026-06-01T00:00:00Z')).phase, 'repaired');
  });
});

describe('node selectors', () => {
  it("reads kubectl's syntax", () => {
    assert.deepEqual(
      parseSelector('pool=h100, zone in (a, b),tier notin (x),gpu,!drain,env!=dev,k==v', '--selector'),
      {
        matchLabels: { pool: 'h100', k: 'v' },
        matchExpressions: [
          { key: 'zone', operator: 'In', values: ['a', 'b'] },
          { key: 'tier', operator: 'NotIn', values: ['x'] },
          { key: 'gpu', operator: 'Exists' },
          { key: 'drain', operator: 'DoesNotExist' },
          { key: 'env', operator: 'NotIn', values: ['dev'] },
        ],
      },
    );
    assert.deepEqual(parseSelector('fakegpu.dev/pool=h100', 's'), {
      matchLabels: { 'fakegpu.dev/pool': 'h100' },
    });
    assert.equal(
      formatSelector(parseSelector('a=b,c in (d,e),f notin (g),h,!i', 's')),
      'a=b,c in (d,e),f notin (g),h,!i',
    );
  });

  it('refuses what is not a selector, naming the term', () => {
    const cases: [string, string][] = [
      [
        '',
        '--selector: empty; expected terms such as k=v, k!=v, "k in (a,b)", "k notin (a,b)", k or !k, separated by commas',
      ],
      [
        'a in (b',
        '--selector: "a in (b": unbalanced parentheses; expected terms such as k=v, k!=v, "k in (a,b)", "k notin (a,b)", k or !k, separated by commas',
      ],
      [
        'a in b',
        '--selector: "a in b" is not a selector term; expected terms such as k=v, k!=v, "k in (a,b)", "k notin (a,b)", k or !k, separated by commas',
      ],
      ['a in ()', '--selector: "a in ()": a set needs values, none of them empty'],
      ['a=1,a=2', '--selector: "a=2": a is already required to be "1"'],
      [
        '-a=1',
        '--selector: "-a" must be a label key: [prefix/]name, the name at most 63 letters, digits, "-", "_", "."',
      ],
      [
        'a=b c',
        '--selector: "a=b c" is not a selector term; expected terms such as k=v, k!=v, "k in (a,b)", "k notin (a,b)", k or !k, separated by commas',
      ],
      [
        `a=${'v'.repeat(64)}`,
        `--selector: "${'v'.repeat(64)}" must be a label value: at most 63 letters, digits, "-", "_", ".", starting and ending alphanumeric`,
      ],
    ];
    for (const [text, message] of cases)
      assert.throws(() => parseSelector(text, '--selector'), { message }, text);
  });

  it('matches as Kubernetes does: NotIn and DoesNotExist match a node without the label', () => {
    const labels = { pool: 'h100', zone: 'a' };
    const m = (text: string): boolean => selectorMatches(parseSelector(text, 's'), labels);
    assert.ok(m('pool=h100'));
    assert.ok(!m('pool=a100'));
    assert.ok(m('zone in (a,b)'));
    assert.ok(!m('zone in (b)'));
    assert.ok(!m('missing in (a)'));
    assert.ok(m('zone notin (b)'));
    assert.ok(!m('zone notin (a)'));
    assert.ok(m('missing notin (a)'));
    assert.ok(m('pool'));
    assert.ok(!m('missing'));
    assert.ok(m('!missing'));
    assert.ok(!m('!pool'));
    assert.ok(m('pool=h100,zone in (a),!drain'));
    assert.ok(!m('pool=h100,zone in (b)'));
    assert.ok(selectorMatches({}, labels), 'an empty selector matches every node');
  });

  it('matchesNode: by name, or by selector', () => {
    const node = { name: 'n1', labels: { pool: 'h100' } };
    assert.ok(matchesNode(spec({ nodeName: 'n1', fault: { type: 'GpuLost' } }), node));
    assert.ok(!matchesNode(spec({ nodeName: 'n2', fault: { type: 'GpuLost' } }), node));
    assert.ok(
      matchesNode(
        spec({ nodeSelector: { matchLabels: { pool: 'h100' } }, fault: { type: 'GpuLost' } }),
        node,
      ),
    );
    assert.ok(
      !matchesNode(spec({ nodeSelector: { matchLabels: { pool: 'b' } }, fault: { type: 'GpuLost' } }), node),
    );
  });
});

/** A node of `n` GPUs; GPU 0 and 1 with static MIG devices. */
function gpus(node: string, n = 8): FaultGpu[] {
  return Array.from({ length: n }, (_, i) => ({
    index: i,
    name: `gpu-${i}`,
    uuid: `GPU-${node}-${String(i).padStart(4, '0')}`,
    mig:
      i < 2
        ? [
            { name: `gpu-${i}-mig-1g10gb-19-0`, gpuInstanceId: 7, computeInstanceId: 0 },
            { name: `gpu-${i}-mig-1g10gb-19-1`, gpuInstanceId: 8, computeInstanceId: 0 },
          ]
        : [],
  }));
}

describe('choosing the GPUs of a fault', () => {
  const names = (r: ReturnType<typeof selectTargets>): string[] =>
    r.targets.map((t) => t.mig?.name ?? t.gpu.name);
  const xid = { type: 'Xid', xid: 79 };

  it('hashes sha256("seed/node/uuid"), first 4 bytes big-endian over 2^32', () => {
    assert.equal(faultHash(0, 'node-a', 'GPU-00000000-0000-0000-0000-000000000000'), 0.025859486311674118);
  });

  it('every GPU when no choice is given', () => {
    assert.deepEqual(names(selectTargets(spec({ nodeName: 'n', fault: xid }), 'n', gpus('n', 3))), [
      'gpu-0',
      'gpu-1',
      'gpu-2',
    ]);
  });

  it('devices by name, static MIG devices too; names the node lacks are unknown', () => {
    const r = selectTargets(
      spec({ nodeName: 'n', devices: ['gpu-3', 'gpu-1-mig-1g10gb-19-1', 'gpu-9', 'gpu-0'], fault: xid }),
      'n',
      gpus('n'),
    );
    assert.deepEqual(names(r), ['gpu-0', 'gpu-1-mig-1g10gb-19-1', 'gpu-3']);
    assert.equal(r.targets[1]?.gpu.name, 'gpu-1');
    assert.deepEqual(r.unknown, ['gpu-9']);
  });

  it('indexes; absent ones unknown', () => {
    const r = selectTargets(spec({ nodeName: 'n', indexes: [5, 1, 12], fault: xid }), 'n', gpus('n'));
    assert.deepEqual(names(r), ['gpu-1', 'gpu-5']);
    assert.deepEqual(r.unknown, ['index 12']);
  });

  it('count: the GPUs of the lowest draws, the same every time, others under another seed or node', () => {
    const pick = (seed: number, node: string): string[] =>
      names(selectTargets(spec({ nodeName: node, count: 3, seed, fault: xid }), node, gpus(node)));
    const a = pick(0, 'n');
    assert.equal(a.length, 3);
    assert.deepEqual(pick(0, 'n'), a);
    const want = gpus('n')
      .map((g) => ({ g, h: faultHash(0, 'n', g.uuid) }))
      .sort((x, y) => x.h - y.h)
      .slice(0, 3)
      .map((x) => x.g.name)
      .sort();
    assert.deepEqual([...a].sort(), want);
    const others = [1, 2, 3, 4, 5].map((s) => pick(s, 'n').join());
    assert.ok(new Set(others).size > 1, 'seeds choose differently');
    assert.notDeepEqual([pick(0, 'm'), pick(0, 'o'), pick(0, 'p')].map(String), [a, a, a].map(String));
    // The order of the input does not matter.
    const reversed = selectTargets(spec({ nodeName: 'n', count: 3, fault: xid }), 'n', gpus('n').reverse());
    assert.deepEqual(names(reversed), a);
    assert.equal(
      selectTargets(spec({ nodeName: 'n', count: 20, fault: xid }), 'n', gpus('n')).targets.length,
      8,
    );
  });

  it('fraction: each GPU on its own, deterministic, about p of 8,000 GPUs', () => {
    for (const [p, fraction] of [
      [0.1, '0.1'],
      [0.01, '0.01'],
      [0.5, '0.5'],
    ] as const) {
      let hits = 0;
      for (let n = 0; n < 1000; n++) {
        const node = `kwok-node-${n}`;
        const s = spec({ nodeSelector: {}, fraction, seed: 42, fault: xid });
        const r = selectTargets(s, node, gpus(node));
        assert.deepEqual(selectTargets(s, node, gpus(node)), r, 'the same again');
        for (const t of r.targets) assert.ok(faultHash(42, node, t.gpu.uuid) < p);
        hits += r.targets.length;
      }
      // Binomial(8000, p): within four standard deviations (a fixed draw: the hash is deterministic).
      const sd = Math.sqrt(8000 * p * (1 - p));
      assert.ok(Math.abs(hits - 8000 * p) <= 4 * sd, `p=${p}: ${hits} of 8000`);
    }
    assert.equal(
      selectTargets(spec({ nodeName: 'n', fraction: '1', fault: xid }), 'n', gpus('n')).targets.length,
      8,
    );
  });

  it('an XID on a static MIG device: named GPUs without it are unknown, the other modes choose among GPUs with it', () => {
    const mig = { type: 'Xid', xid: 94, gpuInstanceId: 8, computeInstanceId: 0 };
    const named = selectTargets(
      spec({ nodeName: 'n', devices: ['gpu-0', 'gpu-2', 'gpu-1-mig-1g10gb-19-0'], fault: mig }),
      'n',
      gpus('n'),
    );
    assert.deepEqual(names(named), ['gpu-0-mig-1g10gb-19-1']);
    assert.deepEqual(named.unknown, ['gpu-2 gi=8 ci=0', 'gpu-1-mig-1g10gb-19-0 gi=8 ci=0']);
    const all = selectTargets(spec({ nodeName: 'n', fault: mig }), 'n', gpus('n'));
    assert.deepEqual(names(all), ['gpu-0-mig-1g10gb-19-1', 'gpu-1-mig-1g10gb-19-1']);
    assert.deepEqual(all.unknown, []);
    const one = selectTargets(spec({ nodeName: 'n', count: 1, fault: mig }), 'n', gpus('n'));
    assert.equal(one.targets.length, 1);
    assert.ok(one.targets[0]?.mig);
  });

  it('other faults ignore MIG devices unless a device name picks one', () => {
    const r = selectTargets(
      spec({ nodeName: 'n', indexes: [0], fault: { type: 'EccDoubleBit' } }),
      'n',
      gpus('n'),
    );
    assert.deepEqual(r.targets, [{ gpu: gpus('n')[0] }]);
  });
});

describe('status patches', () => {
  const entry = (devices: string[], extra: Partial<NodeFaultStatus> = {}): NodeFaultStatus => ({
    devices: devices.map((name) => ({
      name,
      taint: { key: 'gpu.nvidia.com/xid', value: '79', effect: 'NoSchedule' },
      publishedAt: '2026-01-01T00:00:00Z',
    })),
    observedGeneration: 1,
    ...extra,
  });
  const base = { nodeName: 'n1', fault: { type: 'Xid', xid: 79 } };

  it("one node's entry; a merge removes what the new entry no longer says, and null removes the entry", () => {
    let status: unknown = {
      nodes: { n1: entry(['gpu-0'], { message: 'gpu-9 is not on this node' }), n2: entry(['gpu-1']) },
    };
    status = (mergePatch({ status }, nodeStatusPatch('n1', entry(['gpu-0', 'gpu-2']))) as { status: unknown })
      .status;
    const counts = { n1: { nodes: 1, devices: 2 } };
    assert.deepEqual(status, {
      nodes: { n1: entry(['gpu-0', 'gpu-2']), n2: entry(['gpu-1']) },
      writers: counts,
    });
    status = (mergePatch({ status }, nodeStatusPatch('n2', null)) as { status: unknown }).status;
    assert.deepEqual(status, { nodes: { n1: entry(['gpu-0', 'gpu-2']) }, writers: counts });
  });

  it("a plugin's entry comes with its counts; null removes both", () => {
    const p = nodeStatusPatch('n1', entry(['gpu-0', 'gpu-2'], { unlisted: 1 }));
    assert.deepEqual(p.status.writers, { n1: { nodes: 1, devices: 3, unlistedNodes: null } });
    assert.deepEqual(nodeStatusPatch('n1', entry([], { message: 'x' })).status.writers, {
      n1: { nodes: 0, devices: 0, unlistedNodes: null },
    });
    assert.deepEqual(nodeStatusPatch('n1', null).status, { nodes: { n1: null }, writers: { n1: null } });
  });

  it("a fleet's patch: its counts, empty entries left out, devices past the budget counted, nodes past it too", () => {
    const p = nodesStatusPatch(
      'fleet:all',
      new Map([
        ['b', entry(['gpu-0', 'gpu-1'])],
        ['a', entry(['gpu-0', 'gpu-1', 'gpu-2'])],
        ['c', entry([])],
        ['d', entry([], { message: 'index 9 is not on this node' })],
        ['e', entry(['gpu-5'])],
        ['f', entry(['gpu-6'])],
      ]),
      ['old', 'a'],
      { nodes: 3, devices: 4 },
    );
    const nodes = p.status.nodes ?? {};
    assert.deepEqual(Object.keys(nodes).sort(), ['a', 'b', 'd', 'old']);
    assert.equal(nodes['old'], null, 'listed before, not now: removed');
    assert.equal(nodes['a']?.devices.length, 3);
    assert.equal(nodes['a'].unlisted, null);
    assert.equal(nodes['b']?.devices.length, 1);
    assert.equal(nodes['b'].unlisted, 1);
    assert.equal(nodes['d']?.message, 'index 9 is not on this node');
    assert.deepEqual(p.status.writers, { 'fleet:all': { nodes: 4, devices: 7, unlistedNodes: 2 } });
    const merged = mergePatch({ status: { nodes: { old: entry(['gpu-1']) } } }, p) as GpuFault;
    assert.deepEqual(totalsOf(merged), { hits: 7, nodesHit: 4, unlistedNodes: 2 });
    // Nothing hit any more: the fleet's counts go too.
    assert.deepEqual(nodesStatusPatch('fleet:all', new Map(), ['a']).status, {
      nodes: { a: null },
      writers: { 'fleet:all': null },
    });
  });

  it('50,000 nodes of a fleet and a plugin: a status under 64 KiB, fast, with counts right and the rest said', () => {
    const entries = new Map<string, NodeFaultStatus>();
    for (let i = 0; i < 50_000; i++)
      entries.set(`kwok-${String(i).padStart(5, '0')}`, entry(['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3']));
    const t0 = performance.now();
    const fleet = nodesStatusPatch(fleetWriter(), entries);
    let status = mergePatch({}, fleet) as GpuFault;
    status = mergePatch(status, nodeStatusPatch('real-1', entry(['gpu-7'], { unlisted: 1 }))) as GpuFault;
    const f = mergePatch(
      status,
      summaryPatch(status, (w) => w === 'fleet:all'),
    ) as GpuFault;
    const text = JSON.stringify(f);
    const ms = performance.now() - t0;
    assert.ok(text.length < 64 * 1024, `${text.length} bytes`);
    assert.ok(JSON.stringify(fleet).length < 64 * 1024, 'the patch itself too');
    assert.ok(ms < 500, `${ms.toFixed(0)} ms`);
    assert.equal(Object.keys(f.status?.nodes ?? {}).length, LISTED_NODES + 1);
    const listedDevices = Object.values(f.status?.nodes ?? {}).reduce((n, e) => n + e.devices.length, 0);
    assert.equal(listedDevices, LISTED_DEVICES + 1);
    assert.deepEqual(
      { hits: f.status?.hits, nodesHit: f.status?.nodesHit, unlistedNodes: f.status?.unlistedNodes },
      { hits: 200_002, nodesHit: 50_001, unlistedNodes: 50_000 - LISTED_NODES },
    );
  });

  it('knows when a write would change nothing', () => {
    const counts = { n1: { nodes: 1, devices: 1 } };
    const f = fault(base, { status: { nodes: { n1: entry(['gpu-0']) }, writers: counts } });
    assert.ok(entryUnchanged(f, 'n1', entry(['gpu-0'])));
    assert.ok(!entryUnchanged(f, 'n1', entry(['gpu-0'], { message: 'x' })));
    assert.ok(!entryUnchanged(f, 'n1', entry(['gpu-0'], { observedGeneration: 2 })));
    assert.ok(!entryUnchanged(f, 'n1', entry(['gpu-0'], { unlisted: 1 })));
    assert.ok(!entryUnchanged(f, 'n1', null));
    assert.ok(entryUnchanged(f, 'n2', null));
    assert.ok(!entryUnchanged(f, 'n2', entry([])));
    const noCounts = fault(base, { status: { nodes: { n1: entry(['gpu-0']) } } });
    assert.ok(!entryUnchanged(noCounts, 'n1', entry(['gpu-0'])), 'an entry from before counts were written');
  });

  it('totals: only the first writer by name fixes the sums; 0s by anyone once no writer is left', () => {
    const f = fault(base, {
      status: {
        writers: {
          b: { nodes: 1, devices: 1 },
          'fleet:all': { nodes: 10, devices: 30, unlistedNodes: 2 },
        },
      },
    });
    assert.equal(hitsOf(f), 31);
    assert.deepEqual(
      summaryPatch(f, (w) => w === 'b'),
      { status: { hits: 31, nodesHit: 11, unlistedNodes: 2 } },
    );
    assert.equal(
      summaryPatch(f, (w) => w === 'fleet:all'),
      null,
    );
    const settled = fault(base, {
      status: { writers: { a: { nodes: 1, devices: 1 } }, hits: 1, nodesHit: 1, unlistedNodes: 0 },
    });
    assert.equal(
      summaryPatch(settled, () => true),
      null,
    );
    const emptied = fault(base, { status: { writers: {}, hits: 3, nodesHit: 1 } });
    assert.deepEqual(
      summaryPatch(emptied, () => false),
      { status: { hits: 0, nodesHit: 0, unlistedNodes: 0 } },
    );
    assert.equal(
      summaryPatch(fault(base), () => true),
      null,
    );
  });

  it('an invalid fault gets Accepted=False once, not again at every event', () => {
    const now = new Date('2026-01-01T00:00:00.123Z');
    const raw = { metadata: { name: 'f', generation: 2 }, spec: {} };
    const p = invalidPatch(raw, 'spec: give exactly one of nodeName and nodeSelector', now);
    assert.deepEqual(p, {
      status: {
        conditions: [
          {
            type: 'Accepted',
            status: 'False',
            reason: 'Invalid',
            message: 'spec: give exactly one of nodeName and nodeSelector',
            observedGeneration: 2,
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
        ],
      },
    });
    const after = mergePatch(raw, p);
    assert.equal(invalidPatch(after, 'spec: give exactly one of nodeName and nodeSelector', now), null);
    assert.ok(invalidPatch(after, 'spec.fault: another reason', now));
  });
});
