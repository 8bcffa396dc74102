import { gatesWith } from '../src/model/feature-gates/gates.js';
/**
 * bench/mig: what dynamic MIG costs. Render time and slice bytes for 8-GPU presets, plain (the
 * baseline, measured in the same run) and with every MIG partition published; and the latency of
 * preparing a claim for one MIG partition (which creates the GPU and compute instance in the mock NVML)
 * against preparing one whole GPU. In process, without gRPC or the API server.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointStore } from '../src/node/checkpoint/checkpoint.js';
import type { ResourceSlice } from '../src/kube/types/resource.js';
import type { ResourceClaim } from '../src/kube/types/claim.js';
import { DeviceState } from '../src/node/prepare/state.js';
import { resolveProfile } from '../src/process/profile-file.js';
import { modelNode } from '../src/model/render.js';
import { buildSlices } from '../src/model/slice/build.js';

const NODE = 'bench-node';
const K8S = { major: 1, minor: 37, patch: 0 };
const RUNS = Number(process.env['BENCH_ROUNDS'] ?? 30);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

/** What a node of `preset` publishes: the model and its slices, as the plugin builds them. */
function slicesFor(preset: string, dynamicMig: boolean): ResourceSlice[] {
  const m = modelNode(resolveProfile(preset), {
    nodeName: NODE,
    dynamicMig,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: K8S,
    release: '0.5',
  });
  return buildSlices(m.devices, {
    nodeName: NODE,
    driverName: 'gpu.nvidia.com',
    dynamicMig,
    kubernetesVersion: K8S,
    release: '0.5',
  });
}

function render(
  preset: string,
  dynamicMig: boolean,
): { ms: number; bytes: number; devices: number; slices: number } {
  const times: number[] = [];
  let bytes = 0;
  let devices = 0;
  let slices = 0;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const out = slicesFor(preset, dynamicMig);
    times.push(performance.now() - t0);
    bytes = Buffer.byteLength(JSON.stringify(out));
    devices = out.reduce((n, s) => n + (s.spec.devices?.length ?? 0), 0);
    slices = out.length;
  }
  return { ms: median(times), bytes, devices, slices };
}

function claim(uid: string, device: string): ResourceClaim {
  return {
    metadata: { name: uid, namespace: 'bench', uid },
    status: {
      allocation: {
        devices: { results: [{ request: 'gpu', driver: 'gpu.nvidia.com', pool: NODE, device }] },
      },
    },
  };
}

async function prepareLatency(dynamicMig: boolean, device: string): Promise<{ p50: number; p99: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-bench-mig-'));
  const m = modelNode(resolveProfile('dgx-h100'), {
    nodeName: NODE,
    dynamicMig,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: K8S,
    release: '0.5',
  });
  const state = new DeviceState(m.machine, m.nvml, m.devices, new CheckpointStore(join(dir, 'cp.json')), {
    driverName: 'gpu.nvidia.com',
    nodeName: NODE,
    cdiRoot: join(dir, 'cdi'),
    stateDir: join(dir, 'state'),
    gates: gatesWith({}),
    release: '0.5',
  });
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await state.prepare(claim(`c${i}`, device));
    times.push(performance.now() - t0);
    await state.unprepare(`c${i}`);
  }
  return { p50: pct(times, 50), p99: pct(times, 99) };
}

/**
 * Publish time against a real API server (the local cluster, started for this and stopped after):
 * from an empty pool to every slice created, plain as the baseline and with dynamic MIG.
 */
async function publishTimes(): Promise<{ preset: string; plainMs: number; dynamicMs: number }[]> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { pino } = await import('pino');
  const { cacheRoot } = await import('../src/local-cluster/build.js');
  const { clusterDown, clusterUp, kubectl } = await import('../src/local-cluster/cluster.js');
  const { layout } = await import('../src/local-cluster/config.js');
  const { Publisher } = await import('../src/kube/publish/publisher.js');
  const dir = join(cacheRoot(), 'bench-cluster');
  const log = (l: string): void => {
    process.stderr.write(`fakegpu: ${l}\n`);
  };
  const e = await clusterUp({ dir, nodeName: NODE, log });
  const bin = e.PATH.split(':')[0] ?? '';
  const out: { preset: string; plainMs: number; dynamicMs: number }[] = [];
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(e.KUBECONFIG);
    const once = async (preset: string, dynamicMig: boolean): Promise<number> => {
      kubectl(layout(dir), bin, ['delete', 'resourceslices', '--all', '--wait=true']);
      const slices = slicesFor(preset, dynamicMig);
      const p = new Publisher(kc, {
        nodeName: NODE,
        driverName: 'gpu.nvidia.com',
        log: pino({ level: 'silent' }),
      });
      const t0 = performance.now();
      p.start(slices);
      p.stop();
      await p.sync();
      return performance.now() - t0;
    };
    for (const preset of ['dgx-a100', 'dgx-h100', 'dgx-b200']) {
      const plain: number[] = [];
      const dyn: number[] = [];
      for (let i = 0; i < 5; i++) {
        plain.push(await once(preset, false));
        dyn.push(await once(preset, true));
      }
      out.push({ preset, plainMs: median(plain), dynamicMs: median(dyn) });
    }
  } finally {
    await clusterDown({ dir, purge: false, log });
  }
  return out;
}

const f = (n: number): string => n.toFixed(2);
console.log(`bench/mig: ${RUNS} runs per row\n`);
console.log('| preset | mode | slices | devices | JSON bytes | render ms (median) | vs plain |');
console.log('|---|---|---|---|---|---|---|');
for (const preset of ['dgx-a100', 'dgx-h100', 'dgx-b200']) {
  const plain = render(preset, false);
  const dyn = render(preset, true);
  console.log(
    `| ${preset} | plain | ${plain.slices} | ${plain.devices} | ${plain.bytes} | ${f(plain.ms)} | - |`,
  );
  console.log(
    `| ${preset} | dynamic MIG | ${dyn.slices} | ${dyn.devices} | ${dyn.bytes} | ${f(dyn.ms)} | ${f(dyn.ms / plain.ms)}x |`,
  );
}
const full = await prepareLatency(false, 'gpu-3');
const mig = await prepareLatency(true, 'gpu-3-mig-1g10gb-19-0');
console.log(
  '\n| prepare (then unprepare) one device, DGX H100 | p50 ms | p99 ms | vs whole GPU |\n|---|---|---|---|',
);
console.log(`| whole GPU | ${f(full.p50)} | ${f(full.p99)} | - |`);
console.log(`| MIG 1g.10gb, created on demand | ${f(mig.p50)} | ${f(mig.p99)} | ${f(mig.p50 / full.p50)}x |`);
if (process.argv.includes('--publish')) {
  const pub = await publishTimes();
  console.log(
    '\n| publish to a real API server, empty pool (median of 5) | plain ms | dynamic MIG ms | vs plain |\n|---|---|---|---|',
  );
  for (const r of pub)
    console.log(`| ${r.preset} | ${f(r.plainMs)} | ${f(r.dynamicMs)} | ${f(r.dynamicMs / r.plainMs)}x |`);
}
console.log(
  `\nmig: prepare_whole_gpu_p50=${f(full.p50)}ms prepare_mig_p50=${f(mig.p50)}ms ratio=${f(mig.p50 / full.p50)}`,
);
