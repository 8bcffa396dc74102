import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GPU_MODELS as MODELS } from '../../src/model/catalog/models.js';
import { TELEMETRY_MODELS, telemetryOf } from '../../src/model/catalog/telemetry.js';
import {
  attribute,
  claimView,
  podView,
  type ClaimView,
  type PodView,
} from '../../src/model/dcgm/attribution.js';
import { entitiesOf } from '../../src/model/dcgm/entities.js';
import { parseMigDeviceName } from '../../src/model/device/names.js';
import { DcgmExporter, type NodeGpus } from '../../src/model/dcgm/exporter.js';
import { goShortest } from '../../src/model/dcgm/exposition.js';
import { FIELDS } from '../../src/model/dcgm/fields.js';
import { parsePattern, valueAt } from '../../src/model/dcgm/load.js';
import { HEALTHY, healthOf } from '../../src/model/dcgm/values.js';
import { serveDcgm, TEXT_FORMAT } from '../../src/process/dcgm-server.js';
import { styleOf } from '../../src/model/dcgm/version.js';
import { pino } from 'pino';
import { FakegpuError } from '../../src/errors.js';
import { type ResolvedProfile } from '../../src/model/profile/load.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { RENDER_OPTIONS } from '../support/render.js';
import { modelNode } from '../../src/model/render.js';

const OPTS = RENDER_OPTIONS;

function machine(profile: ResolvedProfile | string) {
  const p = typeof profile === 'string' ? resolveProfile(profile) : profile;
  return modelNode(p, OPTS).machine;
}

function node(profile: ResolvedProfile | string, health: NodeGpus['health'] = () => HEALTHY): NodeGpus {
  const m = machine(profile);
  return { node: 'node-a', driverVersion: m.driverVersion, gpus: entitiesOf(m)('node-a'), health };
}

/** Series of one field: labels (as a record, in their order) and the value text. */
function series(text: string, field: string): { labels: [string, string][]; value: string }[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${field}{`))
    .map((l) => {
      const m = /^[A-Z_]+\{(.*)\} (\S+)$/.exec(l);
      assert.ok(m, l);
      const labels = [...(m[1] ?? '').matchAll(/([A-Za-z_]+)="((?:[^"\\]|\\.)*)"/g)].map(
        (x) => [x[1] ?? '', x[2] ?? ''] as [string, string],
      );
      return { labels, value: m[2] ?? '' };
    });
}

const label = (s: { labels: [string, string][] }, k: string) => s.labels.find(([n]) => n === k)?.[1];

const pod = (over: Partial<PodView> = {}): PodView => ({
  namespace: 'ml',
  name: 'train-0',
  annotations: {},
  startedAtMs: 0,
  containers: [{ name: 'main', claims: ['gpus'] }],
  claims: { gpus: 'train-0-gpus-x7k2q' },
  ...over,
});

const claim = (devices: string[], over: Partial<ClaimView> = {}): ClaimView => ({
  namespace: 'ml',
  name: 'train-0-gpus-x7k2q',
  results: devices.map((device) => ({ driver: 'gpu.nvidia.com', pool: 'node-a', device })),
  ...over,
});

const never = () => {
  assert.fail('no annotation should be refused');
};

describe('GPU metrics as dcgm-exporter serves them', () => {
  it("labels in dcgm-exporter's order, the driver version as a label, one series per GPU and field", () => {
    const text = new DcgmExporter({ now: () => 0 }).render([node('dgx-h100')], new Map());
    const util = series(text, 'DCGM_FI_DEV_GPU_UTIL');
    assert.equal(util.length, 8);
    const first = util[0];
    assert.ok(first);
    assert.deepEqual(
      first.labels.map(([k]) => k),
      ['gpu', 'UUID', 'pci_bus_id', 'device', 'modelName', 'hostname', 'DCGM_FI_DRIVER_VERSION'],
    );
    assert.equal(label(first, 'modelName'), 'NVIDIA H100 80GB HBM3');
    assert.match(label(first, 'UUID') ?? '', /^GPU-[0-9a-f]{8}-/);
    assert.match(label(first, 'pci_bus_id') ?? '', /^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d$/);
    assert.equal(label(first, 'device'), 'nvidia0');
    assert.equal(label(first, 'hostname'), 'node-a');
    assert.equal(first.value, '0');
    // Every family has HELP and TYPE with the exporter's type.
    for (const f of FIELDS) assert.ok(text.includes(`# TYPE ${f.name} ${f.type}\n`), f.name);
    assert.ok(text.includes('# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter'));
  });

  it('up to 4.8.2: Hostname, the counters file order, six decimals for doubles', () => {
    const text = new DcgmExporter({ style: 'legacy', now: () => 0 }).render([node('dgx-h100')], new Map());
    const power = series(text, 'DCGM_FI_DEV_POWER_USAGE')[0];
    assert.ok(power);
    assert.equal(label(power, 'Hostname'), 'node-a');
    assert.equal(label(power, 'hostname'), undefined);
    assert.equal(power.value, '70.000000');
    const families = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
    assert.deepEqual(
      families,
      FIELDS.map((f) => f.name),
    );
  });

  it("from 4.8.3: families by name and Go's shortest numbers", () => {
    const text = new DcgmExporter({ now: () => 0 }).render([node('dgx-h100')], new Map());
    const families = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1] ?? '');
    assert.deepEqual(families, [...families].sort());
    assert.equal(series(text, 'DCGM_FI_DEV_POWER_USAGE')[0]?.value, '70');
    assert.equal(goShortest(126272101025), '1.26272101025e+11');
    assert.equal(goShortest(1e6), '1e+06');
    assert.equal(goShortest(123456), '123456');
    assert.equal(goShortest(34.959), '34.959');
    assert.equal(goShortest(0.00001), '1e-05');
    assert.equal(goShortest(0.0001), '0.0001');
    assert.equal(goShortest(0), '0');
  });

  it('values agree with the model: power under the cap, framebuffer totals as NVML reports, clocks in range', () => {
    const n = node('dgx-h100');
    const a = attribute([claim(['gpu-0'])], [pod()], 'gpu.nvidia.com', never);
    const text = new DcgmExporter({ now: () => 0 }).render([n], a);
    const g = n.gpus[0];
    assert.ok(g);
    const t = telemetryOf(g.model);
    const v = (field: string, gpu: number) =>
      Number(series(text, field).find((s) => label(s, 'gpu') === String(gpu))?.value);
    for (const gpu of [0, 1]) {
      assert.ok(v('DCGM_FI_DEV_POWER_USAGE', gpu) <= g.model.powerLimitW);
      assert.equal(
        v('DCGM_FI_DEV_FB_FREE', gpu) + v('DCGM_FI_DEV_FB_USED', gpu) + v('DCGM_FI_DEV_FB_RESERVED', gpu),
        g.model.memoryMiB,
      );
      assert.ok(
        v('DCGM_FI_DEV_SM_CLOCK', gpu) >= t.smIdleMHz && v('DCGM_FI_DEV_SM_CLOCK', gpu) <= t.smMaxMHz,
      );
    }
    // gpu-0 is held by a pod that says nothing: busy; gpu-1 is free: idle.
    assert.equal(v('DCGM_FI_DEV_GPU_UTIL', 0), 100);
    assert.equal(v('DCGM_FI_DEV_SM_CLOCK', 0), 1980);
    assert.equal(v('DCGM_FI_DEV_GPU_UTIL', 1), 0);
    assert.equal(v('DCGM_FI_DEV_FB_USED', 1), 0);
    assert.ok(v('DCGM_FI_DEV_GPU_TEMP', 0) > v('DCGM_FI_DEV_GPU_TEMP', 1));
  });

  it('every catalog model has telemetry figures, with the memory kind and a source', () => {
    assert.deepEqual([...TELEMETRY_MODELS].sort(), MODELS.map((m) => m.key).sort());
    for (const m of MODELS) {
      const t = telemetryOf(m);
      assert.ok(t.smIdleMHz < t.smMaxMHz, m.key);
      assert.ok(t.reservedMiB < m.memoryMiB / 10, m.key);
    }
  });

  it("attribution: pod, namespace, container and DRA's labels, sorted after the driver version", () => {
    const a = attribute([claim(['gpu-3'])], [pod()], 'gpu.nvidia.com', never);
    const text = new DcgmExporter({ now: () => 0 }).render([node('dgx-h100')], a);
    const s = series(text, 'DCGM_FI_DEV_GPU_UTIL').find((x) => label(x, 'pod') !== undefined);
    assert.ok(s);
    assert.equal(label(s, 'gpu'), '3');
    assert.deepEqual(s.labels.slice(6), [
      ['DCGM_FI_DRIVER_VERSION', machine('dgx-h100').driverVersion],
      ['container', 'main'],
      ['dra_claim_name', 'train-0-gpus-x7k2q'],
      ['dra_claim_namespace', 'ml'],
      ['dra_device_name', 'gpu-3'],
      ['dra_driver_name', 'gpu.nvidia.com'],
      ['dra_pool_name', 'node-a'],
      ['namespace', 'ml'],
      ['pod', 'train-0'],
    ]);
  });

  it('a claim two containers list gives a series per container; claims of other drivers and nodes none', () => {
    const p = pod({
      containers: [
        { name: 'a', claims: ['gpus'] },
        { name: 'sidecar', claims: [] },
        { name: 'b', claims: ['gpus'] },
      ],
    });
    const nic = claim(['pci-0000-1a-00-0'], {
      results: [{ driver: 'dra.net', pool: 'node-a', device: 'x' }],
    });
    const a = attribute([claim(['gpu-1']), nic], [p], 'gpu.nvidia.com', never);
    assert.deepEqual(
      a.get('node-a\0gpu-1')?.map((x) => x.labels.find(([k]) => k === 'container')?.[1]),
      ['a', 'b'],
    );
    assert.equal(a.size, 1);
    const text = new DcgmExporter({ now: () => 0 }).render([node('dgx-h100')], a);
    assert.equal(series(text, 'DCGM_FI_DEV_GPU_UTIL').length, 9);
  });

  it('a GPU two claims share (ConsumableShares) is attributed to both pods: one series each, same GPU labels', () => {
    const p1 = pod({ name: 'share-a', claims: { gpus: 'claim-a' } });
    const p2 = pod({ name: 'share-b', claims: { gpus: 'claim-b' } });
    // A pod listing two claims of one GPU keeps one series, its first claim's, as dcgm-exporter dedups.
    const p3 = pod({
      name: 'share-c',
      containers: [{ name: 'main', claims: ['x', 'y'] }],
      claims: { x: 'claim-c1', y: 'claim-c2' },
    });
    const claims = ['claim-a', 'claim-b', 'claim-c1', 'claim-c2'].map((name) => claim(['gpu-2'], { name }));
    const a = attribute(claims, [p1, p2, p3], 'gpu.nvidia.com', never);
    const text = new DcgmExporter({ now: () => 0 }).render([node('dgx-h100')], a);
    const util = series(text, 'DCGM_FI_DEV_GPU_UTIL').filter((x) => label(x, 'gpu') === '2');
    assert.deepEqual(
      util.map((x) => [label(x, 'pod'), label(x, 'dra_claim_name')]),
      [
        ['share-a', 'claim-a'],
        ['share-b', 'claim-b'],
        ['share-c', 'claim-c1'],
      ],
    );
    assert.equal(new Set(util.map((x) => label(x, 'UUID'))).size, 1);
    assert.equal(new Set(util.map((x) => x.value)).size, 1, 'copies of one reading');
  });

  it('a claim two pods share is attributed to both', () => {
    const p2 = pod({ name: 'train-1' });
    const a = attribute([claim(['gpu-0'])], [pod(), p2], 'gpu.nvidia.com', never);
    assert.deepEqual(
      a.get('node-a\0gpu-0')?.map((x) => x.labels.find(([k]) => k === 'pod')?.[1]),
      ['train-0', 'train-1'],
    );
  });

  it('reads claims and pods as the API server gives them: template claims through the pod status', () => {
    const c = claimView({
      metadata: { namespace: 'ml', name: 'p-gpu-abcde' },
      status: {
        allocation: { devices: { results: [{ driver: 'gpu.nvidia.com', pool: 'node-a', device: 'gpu-2' }] } },
      },
    });
    assert.ok(c);
    assert.equal(claimView({ metadata: { name: 'pending' }, status: {} }), null);
    const p = podView({
      metadata: { namespace: 'ml', name: 'p', annotations: { 'fakegpu.dev/gpu-util': '40' } },
      spec: {
        containers: [{ name: 'c', resources: { claims: [{ name: 'gpu' }] } }],
        resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'one-gpu' }],
      },
      status: {
        startTime: '2026-01-01T00:00:00Z',
        resourceClaimStatuses: [{ name: 'gpu', resourceClaimName: 'p-gpu-abcde' }],
      },
    });
    assert.ok(p);
    assert.equal(podView({ metadata: { name: 'no-claims' }, spec: { containers: [] } }), null);
    const a = attribute([c], [p], 'gpu.nvidia.com', never);
    const at = Date.parse('2026-01-01T00:01:00Z');
    const text = new DcgmExporter({ now: () => at }).render([node('dgx-h100')], a);
    const s = series(text, 'DCGM_FI_DEV_GPU_UTIL').find((x) => label(x, 'pod') === 'p');
    assert.equal(s?.value, '40');
    assert.ok(s);
    assert.equal(label(s, 'dra_device_name'), 'gpu-2');
  });

  it('load patterns: a level, a sine from the middle, steps; a bad one is refused in one line', () => {
    assert.deepEqual(parsePattern('85', 'f'), { kind: 'level', percent: 85 });
    const sine = parsePattern('sine(20,80,4m)', 'f');
    assert.equal(valueAt(sine, 0), 50);
    assert.equal(valueAt(sine, 60), 80);
    assert.equal(Math.round(valueAt(sine, 180)), 20);
    const steps = parsePattern('steps(10,90@2m,30@1h)', 'f');
    assert.equal(valueAt(steps, 119), 10);
    assert.equal(valueAt(steps, 120), 90);
    assert.equal(valueAt(steps, 3600), 30);
    for (const bad of [
      '101',
      '-1',
      'sine(80,20,1m)',
      'sine(1,2)',
      'steps(10,90)',
      'steps(10,90@2m,5@1m)',
      'high',
      '',
    ])
      assert.throws(
        () => parsePattern(bad, 'pod ml/p annotation fakegpu.dev/gpu-util'),
        (e: unknown) =>
          e instanceof FakegpuError &&
          e.message ===
            `pod ml/p annotation fakegpu.dev/gpu-util: ${JSON.stringify(bad)} is not a load pattern; expected a percentage 0-100, sine(min,max,period) or steps(first,percent@time,...) with times such as 30s, 5m, 1h`,
        bad,
      );
  });

  it('an annotation that does not parse keeps the busy default and is reported once per call', () => {
    const told: string[] = [];
    const a = attribute(
      [claim(['gpu-0'])],
      [pod({ annotations: { 'fakegpu.dev/gpu-util': 'lots' } })],
      'gpu.nvidia.com',
      (p, e) => told.push(`${p.name}: ${e.message}`),
    );
    assert.equal(told.length, 1);
    assert.match(told[0] ?? '', /^train-0: pod ml\/train-0 annotation fakegpu.dev\/gpu-util: "lots" is not/);
    assert.equal(a.get('node-a\0gpu-0')?.[0]?.load.util.kind, 'level');
  });

  it('MIG: one row per GPU instance with its profile and id, board readings repeated, no utilisation fields', () => {
    const p = resolveProfile('dgx-a100');
    const spec = {
      ...p.spec,
      overrides: [{ index: 2, mig: { mode: 'enabled' as const, layout: '3g.20gb x2' } }],
    };
    const n = node({ ...p, spec });
    const text = new DcgmExporter({ now: () => 0 }).render([n], new Map());
    const gi = series(text, 'DCGM_FI_PROF_GR_ENGINE_ACTIVE').filter((s) => label(s, 'gpu') === '2');
    assert.deepEqual(
      gi.map((s) => [label(s, 'GPU_I_PROFILE'), label(s, 'GPU_I_ID')]),
      [
        ['3g.20gb', '1'],
        ['3g.20gb', '2'],
      ],
    );
    assert.deepEqual(gi[0]?.labels.map(([k]) => k).slice(0, 8), [
      'gpu',
      'UUID',
      'pci_bus_id',
      'device',
      'modelName',
      'GPU_I_PROFILE',
      'GPU_I_ID',
      'hostname',
    ]);
    assert.equal(series(text, 'DCGM_FI_DEV_GPU_UTIL').filter((s) => label(s, 'gpu') === '2').length, 0);
    assert.equal(series(text, 'DCGM_FI_DEV_GPU_TEMP').filter((s) => label(s, 'gpu') === '2').length, 2);
    const fb = series(text, 'DCGM_FI_DEV_FB_FREE').filter((s) => label(s, 'gpu') === '2');
    // An instance's framebuffer is its profile's, as NVML reports a MIG device's memory.
    const profile = n.gpus[2]?.instances?.[0]?.profile;
    assert.equal(profile?.name, '3g.20gb');
    assert.deepEqual(
      fb.map((s) => s.value),
      [String(profile.memoryMiB), String(profile.memoryMiB)],
    );
    assert.deepEqual(parseMigDeviceName('gpu-2-mig-3g20gb-9-4'), { minor: 2, profileId: 9, start: 4 });
    assert.deepEqual(parseMigDeviceName('gpu-0-mig-1g10gb-me-19-6'), { minor: 0, profileId: 19, start: 6 });
    assert.equal(parseMigDeviceName('gpu-2'), null);
  });

  it('faults: the last XID with its code and name, remapped rows from ECC, a lost GPU reports only its XID', () => {
    const m = machine('dgx-h100');
    const lost = m.gpus[1]?.uuid;
    const health = (uuid: string) =>
      uuid === lost
        ? healthOf([{ source: 'f', kind: 'lost' }])
        : healthOf([
            { source: 'f', kind: 'xid', xid: 13 },
            { source: 'g', kind: 'xid', xid: 48 },
            { source: 'g', kind: 'ecc', bits: 2, count: 3 },
          ]);
    const text = new DcgmExporter({ now: () => 0 }).render([node('dgx-h100', health)], new Map());
    const xid = series(text, 'DCGM_FI_DEV_XID_ERRORS');
    const g0 = xid.find((s) => label(s, 'gpu') === '0');
    assert.equal(g0?.value, '48');
    assert.ok(g0);
    assert.deepEqual(g0.labels.slice(-2), [
      ['err_code', '48'],
      ['err_msg', 'Double Bit ECC Error'],
    ]);
    assert.equal(xid.find((s) => label(s, 'gpu') === '1')?.value, '79');
    assert.equal(
      series(text, 'DCGM_FI_DEV_GPU_TEMP').find((s) => label(s, 'gpu') === '1'),
      undefined,
    );
    assert.equal(
      series(text, 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS').find((s) => label(s, 'gpu') === '0')?.value,
      '3',
    );
    // Only the XID series carries err_code.
    assert.equal(
      series(text, 'DCGM_FI_DEV_GPU_TEMP').find((s) => label(s, 'err_code')),
      undefined,
    );
  });

  it('energy is power integrated over time, per GPU, never going back', () => {
    let now = 0;
    const ex = new DcgmExporter({ now: () => now });
    const n = node('dgx-h100');
    const energy = () =>
      Number(series(ex.render([n], new Map()), 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION')[0]?.value);
    assert.equal(energy(), 0);
    now = 10_000;
    // 70 W idle for 10 s: 700 J.
    assert.equal(energy(), 700_000);
    now = 20_000;
    assert.equal(energy(), 1_400_000);
  });

  it('dcgm-exporter versions: 4.8.3 and later 4.8 current, older legacy, 4.9 refused in one line', () => {
    assert.equal(styleOf('4.8.4', 'f'), 'current');
    assert.equal(styleOf('4.6.0-4.8.3', 'f'), 'current');
    assert.equal(styleOf('4.8.2', 'f'), 'legacy');
    assert.equal(styleOf('3.3.9-3.6.1', 'f'), 'legacy');
    assert.throws(
      () => styleOf('4.9.0', '--dcgm-exporter-version'),
      /^FakegpuError: --dcgm-exporter-version: "4.9.0" is not emulated: 4.9.0 renamed/,
    );
    assert.throws(() => styleOf('latest', '--dcgm-exporter-version'), /is not a dcgm-exporter version/);
  });

  it("serves /metrics piece by piece with Prometheus' text type, /health, and 500 when a scrape fails", async () => {
    let fail = false;
    const ex = new DcgmExporter({ now: () => 0 });
    const server = await serveDcgm(
      '127.0.0.1:0',
      () => {
        if (fail) throw new Error('broken');
        return ex.exposition([node('dgx-h100')], new Map());
      },
      pino({ level: 'silent' }),
    );
    try {
      const url = `http://127.0.0.1:${server.port}`;
      const r = await fetch(`${url}/metrics`);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), TEXT_FORMAT);
      assert.equal(await r.text(), ex.render([node('dgx-h100')], new Map()));
      assert.equal((await fetch(`${url}/health`)).status, 200);
      assert.equal((await fetch(`${url}/other`)).status, 404);
      fail = true;
      assert.equal((await fetch(`${url}/metrics`)).status, 500);
    } finally {
      await server.close();
    }
  });
});
