import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { layout } from '../../src/local-cluster/config.js';
import { FAKEGPU_IMAGE } from '../../src/local-cluster/fakegpu-image.js';
import { helmValues, refuseForHelm } from '../../src/local-cluster/helm-chart.js';
import { pluginArgs } from '../../src/local-cluster/plugin-process.js';
import { fleetArgs } from '../../src/local-cluster/fleet-process.js';
import { defaultRelease, releaseOf } from '../../src/local-cluster/releases.js';
import { clusterRestart } from '../../src/local-cluster/restart.js';
import { componentsOf, writeState, type State } from '../../src/local-cluster/state.js';
import { FakegpuError } from '../../src/errors.js';

/** `cluster up --helm`: what runs on the host, the chart's values for the host processes' flags, refusals. */

const state = (o: Partial<State>): State => ({
  nodeName: 'n',
  bin: '/b',
  cniBin: '/c',
  profile: 'dgx-h100',
  dynamicMig: false,
  ...o,
});

describe('cluster up --helm', () => {
  it("runs kube-proxy and none of fakegpu's host processes: the chart's pods take their place", () => {
    const helm = componentsOf(state({ helm: true, kwokNodes: 4, computeDomains: true }));
    assert.ok(helm.includes('kube-proxy') && helm.includes('kwok') && helm.includes('kubelet'));
    assert.deepEqual(
      helm.filter((n) => n.startsWith('fakegpu-')),
      [],
    );
    const host = componentsOf(state({ kwokNodes: 4 }));
    assert.ok(!host.includes('kube-proxy'));
    assert.ok(host.includes('fakegpu-plugin') && host.includes('fakegpu-fleet'));
  });

  it('passes --consumable-shares to the plugin, the fleet and the chart, and nothing when disabled', () => {
    const l = layout('/tmp/c');
    const shared = state({ pluginGates: 'ConsumableShares=true', consumableShares: 'memory', kwokNodes: 2 });
    assert.ok(pluginArgs(l, shared).includes('--consumable-shares=memory'));
    assert.ok(
      pluginArgs(l, shared).includes(
        '--feature-gates=TimeSlicingSettings=true,MPSSupport=true,ConsumableShares=true',
      ),
    );
    const fleet = fleetArgs(l, shared, { http: '127.0.0.1:1' });
    assert.ok(
      fleet.includes('--consumable-shares=memory') && fleet.includes('--feature-gates=ConsumableShares=true'),
    );
    assert.equal(helmValues(l, { ...shared, helm: true })['consumableShares'], 'memory');
    const plain = state({ kwokNodes: 2 });
    assert.ok(!pluginArgs(l, plain).some((a) => a.startsWith('--consumable-shares')));
    assert.ok(!fleetArgs(l, plain, { http: '127.0.0.1:1' }).some((a) => a.startsWith('--consumable-shares')));
    assert.equal(helmValues(l, { ...plain, helm: true })['consumableShares'], undefined);
  });

  it("has the fleet offer Karpenter's GPUs one way: with NICs as DRA devices, or not at all", () => {
    const l = layout('/tmp/c');
    const dra = state({ kwokNodes: 2, with: ['karpenter'], karpenterGpus: 'dra' });
    const ext = state({ kwokNodes: 2, with: ['karpenter'], karpenterGpus: 'extended-resource' });
    const none = state({ kwokNodes: 2 });
    const args = (s: State): string[] =>
      fleetArgs(l, s, { http: '127.0.0.1:1' }).filter(
        (a) => a === '--nics' || a.startsWith('--node-selector'),
      );
    assert.deepEqual(args(dra), ['--nics']);
    assert.deepEqual(args(state({ ...dra, nics: false })), []);
    assert.deepEqual(args(ext), ['--node-selector=!karpenter.sh/nodepool']);
    assert.deepEqual(args(none), []);
    const fleetValues = (s: State): unknown => helmValues(l, { ...s, helm: true })['fleet'];
    assert.deepEqual(fleetValues(dra), { enabled: true, profile: 'dgx-h100', nics: true });
    assert.deepEqual(fleetValues(ext), {
      enabled: true,
      profile: 'dgx-h100',
      nodeSelector: '!karpenter.sh/nodepool',
    });
  });

  it('gives the chart what the host processes get as flags: machine, gates, host paths, the fleet', () => {
    const l = layout('/tmp/c');
    const v = helmValues(
      l,
      state({
        helm: true,
        dynamicMig: true,
        pluginGates: 'NVMLDeviceHealthCheck=true',
        healthService: true,
        kwokNodes: 2,
        kwokProfile: 'dgx-b200',
      }),
    );
    const [repository, tag] = FAKEGPU_IMAGE.split(':');
    assert.deepEqual(v['image'], { repository, tag, pullPolicy: 'Never' });
    assert.equal(v['profile'], 'dgx-h100');
    assert.equal(v['dynamicMig'], true);
    // NVIDIA's rules forbid MPS beside dynamic MIG: the demo's MPSSupport is left out.
    assert.equal(v['featureGates'], 'TimeSlicingSettings=true,NVMLDeviceHealthCheck=true');
    assert.equal(v['kubeletPluginsDir'], '/tmp/c/kubelet/plugins');
    assert.equal(v['kubeletRegistrarDir'], '/tmp/c/kubelet/plugins_registry');
    assert.equal(v['cdiRoot'], '/tmp/c/cdi');
    assert.deepEqual(v['plugin'], { healthService: true });
    assert.deepEqual(v['fleet'], { enabled: true, profile: 'dgx-b200' });
    assert.deepEqual(v['resources'], { computeDomains: { enabled: false } });
    assert.deepEqual(helmValues(l, state({ helm: true }))['fleet'], { enabled: false, profile: 'dgx-h100' });
  });

  it('cluster up --no-nics: the plugin publishes no NICs, as a process and as the chart', () => {
    const l = layout('/tmp/c');
    assert.ok(pluginArgs(l, state({ nics: false })).includes('--no-nics'));
    assert.ok(!pluginArgs(l, state({})).includes('--no-nics'), 'NICs by default, and in older state files');
    assert.deepEqual(helmValues(l, state({ helm: true, nics: false }))['nics'], {
      enabled: false,
      numaAttribute: 'dranet',
    });
    assert.deepEqual(helmValues(l, state({ helm: true }))['nics'], {
      enabled: true,
      numaAttribute: 'dranet',
    });
  });

  it('refuses to restart a chart pod as a host process, before stopping anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-helm-restart-'));
    try {
      writeState(layout(dir), state({ helm: true }));
      await assert.rejects(
        clusterRestart(dir, 'fakegpu-plugin', () => undefined),
        {
          message:
            'cluster restart: this cluster runs fakegpu-plugin as a pod of its Helm chart; delete the pod (kubectl -n nvidia-dra-driver-gpu delete pod <name>) and its controller starts another',
        },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses in one line what the image cannot have: a profile file, a pools file', () => {
    const refused = (s: Parameters<typeof refuseForHelm>[0], field: string, text: RegExp): void => {
      assert.throws(
        () => {
          refuseForHelm(s);
        },
        (e: unknown) => e instanceof FakegpuError && e.field === field && text.test(e.message),
      );
    };
    const release = defaultRelease();
    refused({ release, profile: '/tmp/m.yaml', kwokProfile: null }, '--profile', /is a file; with --helm/);
    refused({ release, profile: null, kwokProfile: './k.yaml' }, '--kwok-profile', /is a file; with --helm/);
    refused(
      { release, profile: null, kwokProfile: null, kwokPools: '/p.yaml' },
      '--kwok-pools',
      /fleet\.pools/,
    );
    refused(
      { release: releaseOf('1.34', 'test'), profile: null, kwokProfile: null },
      '--kubernetes-version',
      /kube-proxy, which is built for Kubernetes 1\.37\.\d+ only/,
    );
    refuseForHelm({ release, profile: 'dgx-h100', kwokProfile: 'dgx-b200' });
  });
});
