import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parse } from 'yaml';
import { CheckpointStore } from '../../src/node/checkpoint/checkpoint.js';
import { ComputeDomainClaims } from '../../src/node/compute-domain/claims.js';
import { cliquesPath, DOMAIN_LABEL } from '../../src/model/compute-domain/resource.js';
import type { CdiSpec } from '../../src/node/cdi/spec.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import { FakeObjects } from '../support/fake-objects.js';

const NS = 'nvidia-dra-driver-gpu';
const CL = '5e7f1c1a-0000-4000-8000-000000000001.388';
const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function setup(o: { clique?: string | null; ready?: boolean; nodeLabel?: string } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'fakegpu-cd-'));
  roots.push(root);
  const api = new FakeObjects();
  const cd = api.seed('/apis/resource.nvidia.com/v1beta1/namespaces/team/computedomains', {
    metadata: { name: 'job' },
    spec: { numNodes: 1, channel: { resourceClaimTemplate: { name: 'job-channel' } } },
  });
  const uid = String(cd.metadata.uid);
  api.seed('/api/v1/nodes', {
    metadata: { name: 'gb-0', labels: o.nodeLabel ? { [DOMAIN_LABEL]: o.nodeLabel } : {} },
  });
  const clique = o.clique === undefined ? CL : o.clique;
  if (clique)
    api.seed(cliquesPath(NS), {
      metadata: { name: `${uid}.${clique}` },
      daemons: [
        {
          nodeName: 'gb-0',
          ipAddress: '10.0.0.1',
          cliqueID: clique,
          index: 0,
          status: o.ready === false ? 'NotReady' : 'Ready',
        },
      ],
    });
  else if (o.ready !== false)
    api.objects.forEach((x) => {
      if (x.metadata.name === 'job')
        x['status'] = {
          status: 'Ready',
          nodes: [{ name: 'gb-0', ipAddress: '', cliqueID: '', index: -1, status: 'Ready' }],
        };
    });
  const cdi = join(root, 'cdi');
  const plugin = join(root, 'plugins', 'compute-domain.nvidia.com');
  const state = new ComputeDomainClaims(new CheckpointStore(join(plugin, 'checkpoint.json')), {
    nodeName: 'gb-0',
    clique,
    namespace: NS,
    api,
    cdiRoot: cdi,
    stateDir: plugin,
    pluginDir: plugin,
    readyWaitMs: 60,
    readyPollMs: 20,
  });
  const spec = (claimUid: string) =>
    parse(readFileSync(join(cdi, `k8s.compute-domain.nvidia.com-claim_${claimUid}.yaml`), 'utf8')) as CdiSpec;
  const label = () =>
    api.read<{ metadata: { labels?: Record<string, string> } }>('/api/v1/nodes/gb-0')?.metadata.labels?.[
      DOMAIN_LABEL
    ];
  return { api, uid, state, spec, label, plugin };
}

function claim(
  uid: string,
  kind: 'channel' | 'daemon',
  params: Record<string, unknown>,
  ns = 'team',
): ResourceClaim {
  const device = `${kind}-0`;
  return {
    metadata: { name: `job-${kind}-${uid}`, namespace: ns, uid },
    status: {
      allocation: {
        devices: {
          results: [{ request: kind, driver: 'compute-domain.nvidia.com', pool: 'gb-0', device }],
          config: [
            {
              source: 'FromClaim',
              requests: [kind],
              opaque: {
                driver: 'compute-domain.nvidia.com',
                parameters: {
                  apiVersion: 'resource.nvidia.com/v1beta1',
                  kind: kind === 'channel' ? 'ComputeDomainChannelConfig' : 'ComputeDomainDaemonConfig',
                  ...params,
                },
              },
            },
          ],
        },
      },
    },
  };
}

const msg = (c: ResourceClaim, why: string) =>
  `error preparing devices for claim '${c.metadata.namespace}/${c.metadata.name}:${c.metadata.uid}': prepare devices failed: ${why}`;

describe("preparing ComputeDomain claims on the node, as NVIDIA's compute-domain plugin does", () => {
  it('gives a channel claim channel 0 as a CDI device node, labels the node, and unlabels it at unprepare', async () => {
    const { uid, state, spec, label } = setup();
    const c = claim('c-1', 'channel', { domainID: uid, allocationMode: 'Single' });
    const devices = await state.prepare(c);
    assert.deepEqual(
      devices.map((d) => [d.deviceName, d.cdiDeviceIds]),
      [['channel-0', ['k8s.compute-domain.nvidia.com/claim=c-1-channel-0']]],
    );
    const s = spec('c-1');
    assert.deepEqual(
      s.devices[0]?.containerEdits.deviceNodes?.map((n) => [n.path, n.type, n.minor]),
      [['/dev/nvidia-caps-imex-channels/channel0', 'c', 0]],
    );
    assert.equal(s.devices[0].containerEdits.env, undefined);
    assert.notEqual(
      s.devices.at(0)?.containerEdits.deviceNodes?.at(0)?.major,
      195,
      "never a real driver's major",
    );
    assert.equal(label(), uid);
    await state.unprepare('c-1');
    assert.equal(label(), undefined);
    assert.deepEqual(state.held(), []);
  });

  it('allocationMode All gives all 2048 channels', async () => {
    const { uid, state, spec } = setup();
    await state.prepare(claim('c-2', 'channel', { domainID: uid, allocationMode: 'All' }));
    const nodes = spec('c-2').devices[0]?.containerEdits.deviceNodes ?? [];
    assert.equal(nodes.length, 2048);
    assert.deepEqual(
      [nodes[2047]?.path, nodes[2047]?.minor],
      ['/dev/nvidia-caps-imex-channels/channel2047', 2047],
    );
  });

  it('waits while the node is not Ready in the domain, then fails with the message, the node labelled', async () => {
    const { uid, state, label } = setup({ ready: false });
    const c = claim('c-3', 'channel', { domainID: uid });
    await assert.rejects(state.prepare(c), {
      message: msg(
        c,
        'error applying config: error asserting ComputeDomain Ready: current node not ready in ComputeDomain',
      ),
    });
    assert.equal(label(), uid, 'labelled first, so that the daemon comes');
    assert.deepEqual(state.held(), []);
  });

  it('refuses a second channel claim, another domain, another namespace, and a domain that does not exist', async () => {
    const { uid, state } = setup();
    await state.prepare(claim('c-4', 'channel', { domainID: uid }));
    const second = claim('c-5', 'channel', { domainID: uid });
    await assert.rejects(state.prepare(second), {
      message: msg(second, 'channel 0 already allocated by claim c-4 (according to checkpoint)'),
    });
    const other = setup({ nodeLabel: 'cd-other' });
    const c = claim('c-6', 'channel', { domainID: other.uid });
    await assert.rejects(other.state.prepare(c), {
      message: msg(c, 'label already exists for a different ComputeDomain'),
    });
    const third = setup();
    const wrongNs = claim('c-7', 'channel', { domainID: third.uid }, 'elsewhere');
    await assert.rejects(third.state.prepare(wrongNs), {
      message: msg(wrongNs, "the ResourceClaim's namespace is different than the ComputeDomain's namespace"),
    });
    const missing = claim('c-8', 'channel', { domainID: 'no-such-uid' });
    await assert.rejects(third.state.prepare(missing), {
      message: msg(missing, 'ComputeDomain not found: no-such-uid'),
    });
    const bad = claim('c-9', 'channel', { domainID: '' });
    await assert.rejects(third.state.prepare(bad), {
      message: msg(bad, 'error applying config: domainID cannot be empty'),
    });
  });

  it('a node without a clique gets the channel without device nodes, once Ready in the status', async () => {
    const { uid, state } = setup({ clique: null });
    const devices = await state.prepare(claim('c-10', 'channel', { domainID: uid }));
    assert.deepEqual(devices[0]?.cdiDeviceIds, []);
  });

  it("gives a daemon claim the domain's identity, its /imexd directory and the IMEX capability; unprepare removes the directory", async () => {
    const { uid, state, spec, plugin } = setup();
    await state.prepare(claim('d-1', 'daemon', { domainID: uid }));
    const edits = spec('d-1').devices[0]?.containerEdits;
    assert.deepEqual(edits?.env, [
      `CLIQUE_ID=${CL}`,
      `COMPUTE_DOMAIN_UUID=${uid}`,
      'COMPUTE_DOMAIN_NAME=job',
      'COMPUTE_DOMAIN_NAMESPACE=team',
    ]);
    const dir = join(plugin, 'domains', uid);
    assert.deepEqual(edits.mounts, [
      { hostPath: dir, containerPath: '/imexd', options: ['rw', 'nosuid', 'nodev', 'bind'] },
    ]);
    assert.deepEqual(
      edits.deviceNodes?.map((n) => n.path),
      ['/dev/nvidia-caps/nvidia-cap1'],
    );
    assert.match(
      readFileSync(join(dir, 'imexd.cfg.tmpl'), 'utf8'),
      /IMEX_NODE_CONFIG_FILE=\/imexd\/nodes.cfg/,
    );
    await state.unprepare('d-1');
    assert.equal(existsSync(dir), false);
  });

  it('refuses to follow a link the daemon container planted at /imexd/imexd.cfg.tmpl: the file it points to is unchanged', async () => {
    const { uid, state, plugin } = setup();
    const dir = join(plugin, 'domains', uid);
    mkdirSync(dir, { recursive: true });
    const victim = join(plugin, '..', 'victim');
    writeFileSync(victim, 'host file\n');
    symlinkSync(victim, join(dir, 'imexd.cfg.tmpl'));
    const c = claim('d-2', 'daemon', { domainID: uid });
    await assert.rejects(state.prepare(c), (e: Error) => {
      assert.equal(
        e.message,
        msg(
          c,
          `refusing to write ${join(dir, 'imexd.cfg.tmpl')}: it is a symbolic link, and a folder a container can write is only ever given plain files`,
        ),
      );
      return true;
    });
    assert.equal(readFileSync(victim, 'utf8'), 'host file\n');
  });

  it('writes /imexd/imexd.cfg.tmpl through no link planted at a temporary name write-file-atomic would pick', async () => {
    const { uid, state, plugin } = setup();
    const dir = join(plugin, 'domains', uid);
    mkdirSync(dir, { recursive: true });
    const target = join(realpathSync(dir), 'imexd.cfg.tmpl');
    const victim = join(plugin, '..', 'victim');
    writeFileSync(victim, 'host file\n');
    // write-file-atomic names its temporary file from its own path, the pid, the thread and a call
    // count; a container that knows them (or tries a few thousand) plants links at the next names.
    const require = createRequire(import.meta.url);
    const lib = require.resolve('write-file-atomic');
    const atomic = require('write-file-atomic') as { _getTmpname: (f: string) => string };
    const tmpName = (n: number) =>
      `${target}.${createHash('sha1').update(lib).update(String(process.pid)).update('0').update(String(n)).digest().readUInt32BE(0)}`;
    const now = atomic._getTmpname(target);
    let n = 1;
    while (tmpName(n) !== now && n < 1_000_000) n++;
    assert.equal(tmpName(n), now, 'write-file-atomic still names its temporary files as this test predicts');
    for (let i = n + 1; i <= n + 64; i++) symlinkSync(victim, tmpName(i));
    await state.prepare(claim('d-3', 'daemon', { domainID: uid }));
    assert.equal(readFileSync(victim, 'utf8'), 'host file\n');
    assert.match(readFileSync(target, 'utf8'), /IMEX_NODE_CONFIG_FILE=\/imexd\/nodes.cfg/);
    assert.equal(readdirSync(dir).filter((f) => !f.startsWith('imexd.cfg.tmpl.')).length, 1);
  });

  it('a restart keeps what was prepared: files rewritten from the checkpoint alone', async () => {
    const { uid, state, plugin, api } = setup();
    await state.prepare(claim('c-11', 'channel', { domainID: uid, allocationMode: 'Single' }));
    const again = new ComputeDomainClaims(new CheckpointStore(join(plugin, 'checkpoint.json')), {
      nodeName: 'gb-0',
      clique: CL,
      namespace: NS,
      api,
      cdiRoot: join(plugin, '..', '..', 'cdi'),
      stateDir: plugin,
      pluginDir: plugin,
    });
    const r = again.restore();
    assert.deepEqual([r.rolledBack, r.stale], [[], []]);
    assert.deepEqual(again.held(), ['c-11']);
  });
});
