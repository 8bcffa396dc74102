import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { dial, invoke, type KubeletClient } from '../../src/node/kubelet/client.js';
import { DRA_V1, startServers } from '../../src/node/kubelet/grpc.js';
import { refuseRealDriver } from '../../src/node/plugin/preflight.js';
import { runPlugin } from '../../src/node/plugin/run.js';
import { FileMigStateStore } from '../../src/node/nvml/state-file.js';
import { gpuClaim, nodeState, pluginOptions } from '../support/node-state.js';

/** The node plugin where the world around it misbehaves: no API server, NVIDIA's driver, a busy socket. */

function unprepare(c: KubeletClient, uid: string): Promise<unknown> {
  return invoke(c, 'NodeUnprepareResources', {
    claims: [{ namespace: 'default', uid, name: `claim-${uid}` }],
  });
}

/** A loopback port nothing listens on: an API server that is down. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) =>
    s.close(() => {
      r();
    }),
  );
  return port;
}

/** A kubeconfig of an API server that is down. */
async function downKubeconfig(root: string): Promise<string> {
  const kubeconfig = join(root, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'c',
          cluster: { server: `https://127.0.0.1:${await closedPort()}`, 'insecure-skip-tls-verify': true },
        },
      ],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return kubeconfig;
}

describe('the node plugin', () => {
  it('serves unprepare from its checkpoint while the API server is down', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-outage-'));
    const { state } = nodeState(root, 'dgx-h100', false);
    await state.prepare(gpuClaim('held', ['gpu-2']));
    const plugin = await runPlugin(pluginOptions(root, await downKubeconfig(root)));

    try {
      const c = dial('dra-v1.proto', DRA_V1, join(root, 'plugins', 'gpu.nvidia.com', 'dra.sock'));
      assert.deepEqual(await unprepare(c, 'held'), { claims: { held: { error: '' } } });
      assert.deepEqual(readdirSync(join(root, 'cdi')), []);
      assert.deepEqual(readdirSync(join(root, 'state', 'claims')), []);
      c.close();
    } finally {
      await plugin.stop();
    }
  });

  it('stops on a damaged NVML state file with one line naming it; --reset-checkpoint starts over, MIG claims included', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-nvml-reset-'));
    const kubeconfig = await downKubeconfig(root);
    const mig = { ...pluginOptions(root, kubeconfig), dynamicMig: true };
    // A first start names the machine's NVML state file.
    await (await runPlugin(mig)).stop();
    const [file = ''] = readdirSync(join(root, 'state')).filter((f) => /^nvml-state-.+\.json$/.test(f));
    const nvmlPath = join(root, 'state', file);
    // A claim holding a dynamic MIG device, then its NVML state damaged (a torn write by hand, a bad disk).
    const { state } = nodeState(root, 'dgx-h100', true);
    await state.prepare(gpuClaim('mig', ['gpu-0-mig-3g40gb-9-4']));
    assert.equal(readdirSync(join(root, 'cdi')).length, 1);
    writeFileSync(nvmlPath, '{"version": 1, "gpus": {');

    const refused = await runPlugin(mig).then(
      async (p) => {
        await p.stop();
        return '';
      },
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    );
    assert.match(
      refused,
      new RegExp(
        `^${nvmlPath}: the NVML state file is not valid JSON \\(.*\\); restart with --reset-checkpoint `,
      ),
    );
    assert.ok(!refused.includes('\n'), refused);

    const plugin = await runPlugin({ ...mig, resetCheckpoint: true });
    await plugin.stop();
    const checkpoint = JSON.parse(readFileSync(join(root, 'state', 'checkpoint.json'), 'utf8')) as {
      preparedClaims: object;
    };
    assert.deepEqual(checkpoint.preparedClaims, {}, 'the claim whose MIG device went with the state');
    assert.deepEqual(readdirSync(join(root, 'cdi')), [], 'its CDI spec swept');
    const fresh = new FileMigStateStore(nvmlPath).load();
    assert.ok(fresh, 'the profile’s state written in its place');
    assert.ok(Object.values(fresh.gpus).every((g) => g.gpuInstances.length === 0));
  });

  it('touches nothing of a plugin that still serves the node: no rollback, no sweep', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-twice-'));
    const { state } = nodeState(root, 'dgx-h100', false);
    await state.prepare(gpuClaim('live', ['gpu-3']));
    // What the sweep would remove: a spec no checkpointed claim holds (the live plugin's, unflushed).
    writeFileSync(join(root, 'cdi', 'k8s.gpu.nvidia.com-claim_unflushed.yaml'), 'kind: x\n');
    const live = await startServers(
      {
        driverName: 'gpu.nvidia.com',
        pluginsDir: join(root, 'plugins'),
        registrarDir: join(root, 'registry'),
        onRegistration: () => undefined,
      },
      { prepare: () => Promise.resolve({ claims: {} }), unprepare: () => Promise.resolve({ claims: {} }) },
    );
    try {
      await assert.rejects(runPlugin(pluginOptions(root, join(root, 'no-kubeconfig'))), {
        message: /dra\.sock: another process serves this socket/,
      });
      assert.deepEqual(readdirSync(join(root, 'cdi')).sort(), [
        'k8s.gpu.nvidia.com-claim_live.yaml',
        'k8s.gpu.nvidia.com-claim_unflushed.yaml',
      ]);
    } finally {
      await live.stop();
    }
  });

  it('refuses to start where NVIDIA’s kernel driver is loaded, and not for our own stand-ins', () => {
    const dev = mkdtempSync(join(tmpdir(), 'fakegpu-dev-'));
    refuseRealDriver(dev);
    const node = (major: number) => {
      spawnSync('rm', ['-f', join(dev, 'nvidiactl')]);
      const r = spawnSync('mknod', [join(dev, 'nvidiactl'), 'c', String(major), '255']);
      assert.equal(r.status, 0, `mknod needs root: ${r.stderr.toString()}`);
    };
    node(120);
    refuseRealDriver(dev);
    node(195);
    assert.throws(
      () => {
        refuseRealDriver(dev);
      },
      {
        message: `${join(dev, 'nvidiactl')}: NVIDIA's kernel driver is loaded on this node (character device, major 195); fakegpu runs only where there is no real GPU, so it does not start`,
      },
    );
  });

  it('does not take over a socket another process serves, but replaces one a crash left', async () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-sock-'));
    const o = {
      driverName: 'gpu.nvidia.com',
      pluginsDir: join(root, 'plugins'),
      registrarDir: join(root, 'registry'),
      onRegistration: () => undefined,
    };
    const h = {
      prepare: () => Promise.resolve({ claims: {} }),
      unprepare: () => Promise.resolve({ claims: {} }),
    };
    const first = await startServers(o, h);
    await assert.rejects(startServers(o, h), {
      message: `${join(root, 'plugins', 'gpu.nvidia.com', 'dra.sock')}: another process serves this socket (NVIDIA's DRA driver, or a second plugin with the same driver name); stop it first`,
    });
    await first.stop();
    // A socket file nobody serves any more, as a kill -9 of its server leaves it.
    mkdirSync(join(root, 'registry'), { recursive: true });
    const sock = join(root, 'registry', 'gpu.nvidia.com-reg.sock');
    const server = spawn(process.execPath, [
      '-e',
      `require('net').createServer().listen(${JSON.stringify(sock)}, () => console.log('up'))`,
    ]);
    await new Promise<void>((r) =>
      server.stdout.once('data', () => {
        r();
      }),
    );
    server.kill('SIGKILL');
    await new Promise<void>((r) =>
      server.once('exit', () => {
        r();
      }),
    );
    assert.ok(existsSync(sock), 'the dead server left its socket file');
    const second = await startServers(o, h);
    await second.stop();
  });
});
