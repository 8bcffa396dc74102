import { gatesWith } from '../src/model/feature-gates/gates.js';
/**
 * bench/prepare: NodePrepareResources / NodeUnprepareResources over the real gRPC socket, as the kubelet
 * calls them, for 1, 10 and 100 claims in flight. The baseline, measured in the same run, is the same
 * gRPC round trip to a handler that does nothing; the ratio says what preparing itself costs. The API
 * server round trip (reading the claim) is left out here: the claims are served from memory.
 * Also: resident memory of a plugin's model for 8 GPUs, plain and with dynamic MIG.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CheckpointStore } from '../src/node/checkpoint/checkpoint.js';
import { dial, invoke } from '../src/node/kubelet/client.js';
import { DRA_V1, startServers, type ClaimRef, type DraHandlers } from '../src/node/kubelet/grpc.js';
import type { ResourceClaim } from '../src/kube/types/claim.js';
import { DeviceState } from '../src/node/prepare/state.js';
import { resolveProfile } from '../src/process/profile-file.js';
import { modelNode } from '../src/model/render.js';

const NODE = 'bench-node';
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 20);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

interface Row {
  variant: string;
  inflight: number;
  p50: number;
  p99: number;
  perSecond: number;
}

async function measure(variant: string, handlers: DraHandlers, inflight: number): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-bench-'));
  const servers = await startServers(
    {
      driverName: 'gpu.nvidia.com',
      pluginsDir: join(dir, 'p'),
      registrarDir: join(dir, 'r'),
      onRegistration: () => undefined,
    },
    handlers,
  );
  const c = dial('dra-v1.proto', DRA_V1, servers.draSocket);
  const lat: Record<'prepare' | 'unprepare', number[]> = { prepare: [], unprepare: [] };
  const busy: Record<'prepare' | 'unprepare', number> = { prepare: 0, unprepare: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const refs: ClaimRef[] = Array.from({ length: inflight }, (_, i) => ({
      namespace: 'bench',
      name: `c${i}`,
      uid: `r${round}-c${i}`,
    }));
    for (const [method, kind] of [
      ['NodePrepareResources', 'prepare'],
      ['NodeUnprepareResources', 'unprepare'],
    ] as const) {
      const t0 = performance.now();
      await Promise.all(
        refs.map(async (ref) => {
          const s = performance.now();
          await invoke(c, method, { claims: [ref] });
          lat[kind].push(performance.now() - s);
        }),
      );
      busy[kind] += performance.now() - t0;
    }
  }
  c.close();
  await servers.stop();
  rmSync(dir, { recursive: true, force: true });
  return (['prepare', 'unprepare'] as const).map((k) => ({
    variant: `${variant} ${k}`,
    inflight,
    p50: pct(lat[k], 50),
    p99: pct(lat[k], 99),
    perSecond: (ROUNDS * inflight) / (busy[k] / 1000),
  }));
}

function fakegpuHandlers(): DraHandlers {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-bench-state-'));
  // 128 GPUs so that 100 claims in flight each get a GPU of their own.
  const profile = { name: 'bench', preset: null, spec: { gpus: [{ model: 'H100-SXM5-80GB', count: 128 }] } };
  const model = modelNode(profile, {
    nodeName: NODE,
    dynamicMig: false,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: '0.5',
  });
  const state = new DeviceState(
    model.machine,
    model.nvml,
    model.devices,
    new CheckpointStore(join(dir, 'cp.json')),
    {
      driverName: 'gpu.nvidia.com',
      nodeName: NODE,
      cdiRoot: join(dir, 'cdi'),
      stateDir: join(dir, 'state'),
      gates: gatesWith({ TimeSlicingSettings: true, MPSSupport: true }),
      release: '0.5',
    },
  );
  const claim = (ref: ClaimRef): ResourceClaim => ({
    metadata: { name: ref.name, namespace: ref.namespace, uid: ref.uid },
    status: {
      allocation: {
        devices: {
          results: [
            {
              request: 'gpu',
              driver: 'gpu.nvidia.com',
              pool: NODE,
              device: `gpu-${Number(ref.name.slice(1))}`,
            },
          ],
        },
      },
    },
  });
  return {
    prepare: async (refs) => ({
      claims: Object.fromEntries(
        await Promise.all(
          refs.map(async (r) => [r.uid, { devices: await state.prepare(claim(r)), error: '' }] as const),
        ),
      ),
    }),
    unprepare: async (refs) => {
      for (const r of refs) await state.unprepare(r.uid);
      return { claims: Object.fromEntries(refs.map((r) => [r.uid, { error: '' }])) };
    },
  };
}

const noop: DraHandlers = {
  prepare: (refs) =>
    Promise.resolve({ claims: Object.fromEntries(refs.map((r) => [r.uid, { devices: [], error: '' }])) }),
  unprepare: (refs) =>
    Promise.resolve({ claims: Object.fromEntries(refs.map((r) => [r.uid, { error: '' }])) }),
};

/** RSS of a fresh process holding a plugin's model and slices for one preset. */
function rss(profile: string, dynamicMig: boolean): number {
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync(process.execPath, [self, '--rss', profile, dynamicMig ? 'dynamic' : 'plain'], {
    encoding: 'utf8',
  });
  return Number(r.stdout.trim());
}

if (process.argv[2] === '--rss') {
  const { buildSlices } = await import('../src/model/slice/build.js');
  const m = modelNode(resolveProfile(process.argv[3] ?? 'dgx-h100'), {
    nodeName: NODE,
    dynamicMig: process.argv[4] === 'dynamic',
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: '0.5',
  });
  const slices = buildSlices(m.devices, {
    nodeName: NODE,
    driverName: 'gpu.nvidia.com',
    dynamicMig: process.argv[4] === 'dynamic',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: '0.5',
  });
  globalThis.gc?.();
  process.stdout.write(`${process.memoryUsage().rss}\n${slices.length > 0 ? '' : ''}`);
  process.exit(0);
}

const rows: Row[] = [];
const fake = fakegpuHandlers();
for (const inflight of [1, 10, 100]) {
  rows.push(...(await measure('baseline (no-op handler)', noop, inflight)));
  rows.push(...(await measure('fakegpu', fake, inflight)));
}
const f = (n: number): string => n.toFixed(2);
console.log(`bench/prepare: ${ROUNDS} rounds per row, one claim per call, over the DRA v1 Unix socket\n`);
console.log('| variant | claims in flight | p50 ms | p99 ms | claims/s | vs baseline |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) {
  const base = rows.find(
    (b) =>
      b.variant === `baseline (no-op handler) ${r.variant.split(' ').pop() ?? ''}` &&
      b.inflight === r.inflight,
  );
  console.log(
    `| ${r.variant} | ${r.inflight} | ${f(r.p50)} | ${f(r.p99)} | ${r.perSecond.toFixed(0)} | ${base && base !== r ? `${f(base.perSecond / r.perSecond)}x slower` : '-'} |`,
  );
}
const mib = (b: number): string => (b / 1048576).toFixed(1);
const plain = rss('dgx-h100', false);
const dyn = rss('dgx-h100', true);
console.log(
  `\n| plugin model, 8x H100 | RSS MiB |\n|---|---|\n| plain | ${mib(plain)} |\n| dynamic MIG (208 devices) | ${mib(dyn)} |`,
);
const p100 = rows.find((r) => r.variant === 'fakegpu prepare' && r.inflight === 100);
console.log(
  `\nprepare: inflight=100 p50=${f(p100?.p50 ?? 0)}ms p99=${f(p100?.p99 ?? 0)}ms claims_per_s=${(p100?.perSecond ?? 0).toFixed(0)} rss_plain_mib=${mib(plain)} rss_dynamic_mig_mib=${mib(dyn)}`,
);
