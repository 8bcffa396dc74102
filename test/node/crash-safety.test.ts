import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  rmSync,
  closeSync,
  renameSync,
  statSync,
  existsSync,
  openSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CheckpointStore } from '../../src/node/checkpoint/checkpoint.js';
import { fullComputeInstanceProfile } from '../../src/model/nvml/types.js';
import { parseChecked, withChecksum, writeDurably } from '../../src/node/durable/file.js';
import { under } from '../../src/node/durable/path.js';
import { CRASH_ENV, CRASH_POINTS, type CrashPoint } from '../../src/node/prepare/crash.js';
import { gpuClaim, nodeState } from '../support/node-state.js';

/**
 * What survives a kill -9 and what a restart finishes or undoes: each step of a prepare and an
 * unprepare is crashed for real in a child process, and a second start must leave the node exactly as
 * if the claim had never been seen (or, once completed, as prepared), with its GPU free for the next.
 */

const CHILD = join(dirname(fileURLToPath(import.meta.url)), '..', 'support', 'crash-child.js');
const CDI_FILE = (uid: string) => `k8s.gpu.nvidia.com-claim_${uid}.yaml`;
/** One 1g.10gb and one 3g.40gb partition on GPU 0: two GPU instances, so a crash can fall between them. */
const PARTITIONS = ['gpu-0-mig-1g10gb-19-0', 'gpu-0-mig-3g40gb-9-4'];

function child(root: string, args: string[], crash?: CrashPoint) {
  const { [CRASH_ENV]: _inherited, ...env } = process.env;
  if (crash) env[CRASH_ENV] = crash;
  return spawnSync(process.execPath, [CHILD, root, ...args], { env, encoding: 'utf8' });
}

/** Every GPU instance on every GPU of the node, as NVML reports it. */
function gpuInstances(root: string): string[] {
  const { model } = nodeState(root);
  const out: string[] = [];
  for (const g of model.devices) {
    const dev = model.nvml.deviceGetHandleByUUID(g.gpu.uuid);
    for (const p of g.gpu.migProfiles)
      for (const gi of dev.getGpuInstances(p.info)) out.push(`${g.gpu.index}/${gi.getInfo().id}`);
  }
  return out;
}

function leftovers(root: string) {
  const claims = join(root, 'state', 'claims');
  return {
    cdi: existsSync(join(root, 'cdi')) ? readdirSync(join(root, 'cdi')) : [],
    views: existsSync(claims) ? readdirSync(claims) : [],
    checkpoint: new CheckpointStore(join(root, 'state', 'checkpoint.json')).all().map(([uid]) => uid),
    instances: gpuInstances(root),
  };
}

describe('a kill -9 at every step', () => {
  const prepareSteps = CRASH_POINTS.filter((p) => !p.startsWith('unprepare'));
  for (const point of prepareSteps) {
    it(`of a dynamic MIG prepare, at ${point}: the next start finishes or undoes it, and the GPU is usable`, async () => {
      const root = mkdtempSync(join(tmpdir(), 'fakegpu-crash-'));
      const r = child(root, ['prepare', 'c1', ...PARTITIONS], point);
      assert.equal(r.signal, 'SIGKILL', `the child died at ${point}: ${r.stderr}`);
      const { state } = nodeState(root);
      const restored = state.restore();
      const left = leftovers(root);
      if (point === 'prepare-completed') {
        // Recorded as done before the crash: it stays prepared, files and all, and a retry returns it.
        assert.deepEqual(left.checkpoint, ['c1']);
        assert.deepEqual(left.cdi, [CDI_FILE('c1')]);
        assert.equal(left.instances.length, 2);
        const again = await state.prepare(gpuClaim('c1', PARTITIONS));
        assert.equal(again.length, 2);
        await state.unprepare('c1');
      } else {
        assert.deepEqual(restored.rolledBack, ['c1'], 'the half-done claim is rolled back');
        assert.deepEqual(left, { cdi: [], views: [], checkpoint: [], instances: [] });
      }
      // The kubelet retries: the same partitions can be made again, and released without a trace.
      const devices = await state.prepare(gpuClaim('c2', PARTITIONS));
      assert.deepEqual(
        devices.map((d) => d.uuid.slice(0, 4)),
        ['MIG-', 'MIG-'],
      );
      await state.unprepare('c2');
      assert.deepEqual(leftovers(root), { cdi: [], views: [], checkpoint: [], instances: [] });
    });
  }

  for (const point of CRASH_POINTS.filter((p) => p.startsWith('unprepare'))) {
    it(`of an unprepare, at ${point}: the kubelet's retry finishes it`, () => {
      const root = mkdtempSync(join(tmpdir(), 'fakegpu-crash-'));
      assert.equal(child(root, ['prepare', 'c1', ...PARTITIONS]).stdout, 'done\n');
      const r = child(root, ['unprepare', 'c1'], point);
      assert.equal(r.signal, 'SIGKILL', r.stderr);
      assert.equal(child(root, ['unprepare', 'c1']).stdout, 'done\n');
      assert.deepEqual(leftovers(root), { cdi: [], views: [], checkpoint: [], instances: [] });
    });
  }
});

describe('restarts and running containers', () => {
  it('keep the view folders a container has mounted: files are replaced in place, never the folder', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-views-'));
    const first = nodeState(root, 'dgx-h100', false);
    await first.state.prepare(gpuClaim('v1', ['gpu-0']));
    const claimDir = join(root, 'state', 'claims', 'v1');
    const [view = ''] = readdirSync(claimDir);
    const files = readdirSync(join(claimDir, view)).sort();
    assert.equal(statSync(join(claimDir, view)).mode & 0o777, 0o755, 'readable by a container of any user');
    // What a bind mount holds: the folder itself, not its path. Seen through an open descriptor, a
    // folder removed and made again is an empty, deleted one.
    const held = openSync(join(claimDir, view), 'r');
    try {
      // A restart restores every completed claim; a repeated prepare of a completed claim rewrites it.
      const second = nodeState(root, 'dgx-h100', false);
      second.state.restore();
      await second.state.prepare(gpuClaim('v1', ['gpu-0']));
      const seen = (): string[] => {
        try {
          return readdirSync(`/proc/self/fd/${held}`).sort();
        } catch {
          return [];
        }
      };
      assert.deepEqual(seen(), files, 'the mounted folder still shows its files');
      assert.match(
        readFileSync(`/proc/self/fd/${held}/L`, 'utf8'),
        /^GPU @I@: NVIDIA H100 80GB HBM3 \(UUID: GPU-/,
      );
      await second.state.unprepare('v1');
      assert.equal(existsSync(claimDir), false, 'unprepare removes the folder');
    } finally {
      closeSync(held);
    }
  });

  it('a GPU instance a crash left without its compute instance is destroyed at start, freeing its placement', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-gi-'));
    const { model } = nodeState(root);
    const gpu = model.nvml.deviceGetHandleByIndex(0);
    gpu.setMigMode(1);
    const info = model.devices[0]?.gpu.migProfiles.find((p) => p.name === '3g.40gb')?.info;
    assert.ok(info);
    gpu.createGpuInstanceWithPlacement(info, { start: 4, size: 4 });
    const { state } = nodeState(root);
    assert.equal(state.restore().swept.instances, 1);
    assert.equal((await state.prepare(gpuClaim('g1', ['gpu-0-mig-3g40gb-9-4']))).length, 1);
  });
});

describe('MIG instances of more than one claim', () => {
  it('an unprepare retried after its instance was gone does not take a new claim’s instance in the same slot', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-slot-'));
    const { state, model } = nodeState(root);
    await state.prepare(gpuClaim('c1', ['gpu-0-mig-3g40gb-9-0']));
    // A crash at unprepare-undone: c1's instance destroyed, its record still there.
    const gpu = model.nvml.deviceGetHandleByIndex(0);
    for (const p of model.devices[0]?.gpu.migProfiles ?? [])
      for (const gi of gpu.getGpuInstances(p.info)) {
        const full = gi.getComputeInstanceProfileInfo(fullComputeInstanceProfile(p.enumName), 0);
        for (const ci of gi.getComputeInstances(full)) ci.destroy();
        gi.destroy();
      }
    // Another claim gets a 4g.40gb at start 0: NVML gives it the same instance ID.
    const [c2] = await state.prepare(gpuClaim('c2', ['gpu-0-mig-4g40gb-5-0']));
    assert.ok(c2);
    assert.equal(c2.migInstance?.gpuInstanceId, 1);
    await state.unprepare('c1');
    assert.deepEqual(
      gpu.getMigDevices().map((m) => m.getUUID()),
      [c2.uuid],
      'c2 keeps its MIG device',
    );
  });

  it('admin access to a partition another claim holds is refused, and the holder keeps its instance (0.4)', async () => {
    // v0.5.0 refuses admin access on any MIG device before preparing (test/node/prepare.test.ts).
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-admin-'));
    const { state, model } = nodeState(root, 'dgx-h100', true, '0.4');
    await state.prepare(gpuClaim('b', ['gpu-1-mig-1g10gb-19-0']));
    const admin = gpuClaim('a', ['gpu-1-mig-1g10gb-19-0']);
    for (const r of admin.status?.allocation?.devices?.results ?? []) r.adminAccess = true;
    await assert.rejects(state.prepare(admin), {
      message:
        'error preparing devices for claim default/claim-a:a: prepare devices failed: admin access to MIG partition gpu-1-mig-1g10gb-19-0, which claim b holds, is not supported',
    });
    assert.equal(model.nvml.deviceGetHandleByIndex(1).getMigDevices().length, 1);
  });

  it('a claim recorded on a static MIG device is stale once the node runs dynamic MIG', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-switch-'));
    const before = nodeState(root, 'dgx-h100', false);
    await before.state.prepare(gpuClaim('whole', ['gpu-5']));
    // A whole GPU stays a whole GPU under dynamic MIG, and is kept.
    const after = nodeState(root, 'dgx-h100', true);
    assert.deepEqual(after.state.restore().stale, []);
    const cp = after.checkpoint.get('whole');
    const [d] = cp?.devices ?? [];
    assert.ok(cp && d);
    // A static MIG device's record (no instance made at prepare) under a name that is now a partition.
    cp.devices = [{ ...d, deviceName: 'gpu-5-mig-1g10gb-19-0', type: 'mig' }];
    after.checkpoint.put('whole', cp);
    after.checkpoint.flush();
    assert.deepEqual(nodeState(root, 'dgx-h100', true).state.restore().stale, ['whole']);
  });
});

describe('claim UIDs from the kubelet', () => {
  it('are refused before they name a path: empty, ../../x, a slash; nothing is removed', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-uid-'));
    const outside = join(root, 'x');
    mkdirSync(outside);
    writeFileSync(join(outside, 'keep'), 'mine');
    const { state } = nodeState(join(root, 'a', 'b'), 'dgx-h100', false);
    await state.prepare(gpuClaim('u1', ['gpu-1']));
    for (const bad of ['', '../../x', '../../../x', 'a/b', '.', '..']) {
      await assert.rejects(state.unprepare(bad), {
        message: new RegExp(
          `^claim UID ${JSON.stringify(bad).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is not a Kubernetes UID`,
        ),
      });
      await assert.rejects(state.prepare(gpuClaim(bad, ['gpu-2'])), /is not a Kubernetes UID/);
    }
    assert.equal(readFileSync(join(outside, 'keep'), 'utf8'), 'mine');
    assert.deepEqual(readdirSync(join(root, 'a', 'b', 'state', 'claims')), ['u1']);
    assert.deepEqual(readdirSync(join(root, 'a', 'b', 'cdi')), [CDI_FILE('u1')]);
  });

  it('paths built from input stay under their root', () => {
    assert.equal(under('/s', 'claims', 'u1'), '/s/claims/u1');
    for (const parts of [[''], ['..', 'x'], ['claims', '..', '..', 'x'], ['/etc']])
      assert.throws(() => under('/s', ...parts), /is not a path under \/s$/);
  });
});

describe('durable files', () => {
  it('carry a checksum; a damaged checkpoint is refused with one line that says how to reset', () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-cp-'));
    const path = join(root, 'checkpoint.json');
    const cp = new CheckpointStore(path);
    cp.put('u1', { namespace: 'ns', name: 'n', state: 'PrepareCompleted', devices: [], configState: {} });
    cp.flush();
    const text = readFileSync(path, 'utf8');
    assert.match(text, /"checksum": "sha256:[0-9a-f]{64}"/);
    writeFileSync(path, text.replace('"ns"', '"nt"'));
    assert.throws(() => new CheckpointStore(path), {
      message: new RegExp(
        `^${path}: the checkpoint is damaged: its checksum "sha256:[0-9a-f]{64}" does not match its content; restart with --reset-checkpoint \\(env FAKEGPU_RESET_CHECKPOINT=true`,
      ),
    });
    assert.deepEqual(new CheckpointStore(path, true).all(), []);
  });

  it('a write that failed is not forgotten: the next durable() fails too, and one that succeeds writes it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-full-'));
    const dir = join(root, 'state');
    const cp = new CheckpointStore(join(dir, 'checkpoint.json'));
    cp.put('u1', { namespace: 'ns', name: 'n', state: 'PrepareCompleted', devices: [], configState: {} });
    // The folder replaced by a file: every write fails, as on a full or read-only disk.
    renameSync(dir, `${dir}.away`);
    writeFileSync(dir, '');
    await assert.rejects(cp.durable(), /ENOTDIR|EEXIST/);
    await assert.rejects(cp.durable(), /ENOTDIR|EEXIST/);
    rmSync(dir);
    renameSync(`${dir}.away`, dir);
    await cp.durable();
    assert.deepEqual(
      new CheckpointStore(join(dir, 'checkpoint.json')).all().map(([uid]) => uid),
      ['u1'],
    );
  });

  it('a checkpoint of the version before checksums still loads', () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-cp-'));
    const path = join(root, 'checkpoint.json');
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const claim = { namespace: 'ns', name: 'n', state: 'PrepareCompleted', devices: [], configState: {} };
    writeFileSync(path, JSON.stringify({ version: 1, nodeBootId: boot, preparedClaims: { u1: claim } }));
    assert.deepEqual(new CheckpointStore(path).all(), [['u1', claim]]);
    const again = parseChecked(readFileSync(path, 'utf8'));
    assert.ok(again.ok && again.checksummed && again.data['version'] === 2, 'rewritten with a checksum');
  });

  it('write whole files and leave no temporary file behind', () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-durable-'));
    const path = join(root, 'deep', 'f.json');
    writeDurably(path, withChecksum({ a: 1 }));
    writeDurably(path, withChecksum({ a: 2 }));
    assert.deepEqual(readdirSync(join(root, 'deep')), ['f.json']);
    assert.deepEqual(parseChecked(readFileSync(path, 'utf8')), {
      ok: true,
      data: { a: 2 },
      checksummed: true,
    });
  });

  it('a damaged checkpoint reset is followed by a sweep of CDI specs, views, MIG instances and temporary files', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-sweep-'));
    const first = nodeState(root);
    await first.state.prepare(gpuClaim('s1', ['gpu-3-mig-7g80gb-0-0']));
    await first.state.prepare(gpuClaim('s2', ['gpu-4']));
    writeFileSync(join(root, 'cdi', `${CDI_FILE('s3')}.1a2b3c4d`), 'half');
    writeFileSync(join(root, 'cdi', 'other-vendor.yaml'), 'not ours');
    const path = join(root, 'state', 'checkpoint.json');
    // A good checkpoint survives a reset left switched on; a damaged one is set aside.
    assert.equal(new CheckpointStore(path, true).all().length, 2);
    writeFileSync(path, readFileSync(path, 'utf8').replace('"s2"', '"s9"'));
    const cp = new CheckpointStore(path, true);
    assert.deepEqual(cp.all(), []);
    assert.match(cp.resetFrom ?? '', /^the checkpoint is damaged: its checksum/);
    const { state } = nodeState(root);
    const r = state.restore();
    assert.deepEqual(r.swept, { cdiSpecs: 3, views: 2, instances: 1 });
    assert.deepEqual(leftovers(root), {
      cdi: ['other-vendor.yaml'],
      views: [],
      checkpoint: [],
      instances: [],
    });
  });
});
