import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { releaseOf } from '../../src/local-cluster/releases.js';
import { apiLimits, LIMIT_CONSTANTS, RELEASE_LIMITS, type ApiLimits } from '../../src/kube/types/limits.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { compareSemver, parseKubernetesVersion } from '../../src/kube/types/version.js';
import { PRESETS } from '../../src/model/preset/index.js';
import { eventually, kubectl, mustKubectl, sharedCluster } from '../support/cluster.js';
import {
  allocatedDevices,
  apply,
  claimTemplate,
  cleanup,
  deviceRequest,
  MATRIX_CLUSTER_DIR,
  MATRIX_KWOK_NODES,
  MATRIX_NODE,
  MATRIX_PROFILE,
  podClaim,
  podManifest,
  running,
  seen,
} from '../support/e2e.js';
import { render } from '../support/render.js';
import { claimStatusChecks } from '../support/claim-status-rbac.js';

/**
 * The reduced end-to-end set `npm run e2e:matrix` runs on every Kubernetes release fakegpu builds: one
 * cluster per release (a DGX H100 with dynamic MIG and DRANET-shaped NICs, beside 20 KWOK nodes), and
 * every case against that release's own API server, scheduler and kubelet.
 */
const release = releaseOf(process.env['FAKEGPU_MATRIX_RELEASE'] ?? '1.37', 'FAKEGPU_MATRIX_RELEASE');
const version = parseKubernetesVersion(release.version, 'release');

const onePod = (e: Exports, name: string, template: string, extra: Record<string, unknown> = {}) => {
  const p = podManifest(e, {
    name,
    claims: [{ name: 'devs', template }],
    containers: [{ name: 'main', claims: [{ name: 'devs' }] }],
  }) as { spec: Record<string, unknown> };
  p.spec = { ...p.spec, ...extra };
  return p;
};

describe(`Kubernetes ${release.version}`, () => {
  let e: Exports;
  before(async () => {
    e = await sharedCluster({
      dir: MATRIX_CLUSTER_DIR,
      nodeName: MATRIX_NODE,
      release,
      profile: MATRIX_PROFILE,
      dynamicMig: true,
      nicNumaAttribute: 'standard',
      kwokNodes: MATRIX_KWOK_NODES,
    });
    // Pods only after the node's pools are whole: a pod the scheduler found unschedulable waits for an
    // event, and a slice that was already there brings none.
    await eventually('the node publishes its GPU and NIC pools whole', () => {
      const items = (
        JSON.parse(
          mustKubectl(e, [
            'get',
            'resourceslices',
            `--field-selector=spec.nodeName=${MATRIX_NODE}`,
            '-o',
            'json',
          ]),
        ) as { items: ResourceSlice[] }
      ).items;
      const whole = (driver: string) => {
        const mine = items.filter((s) => s.spec.driver === driver);
        return mine.length > 0 && mine.length === mine[0]?.spec.pool.resourceSliceCount;
      };
      return whole('gpu.nvidia.com') && whole('dra.net') ? true : undefined;
    });
  });
  after(() => {
    cleanup(e);
  });

  it('version: the API server and the kubelet are this release', () => {
    const v = JSON.parse(mustKubectl(e, ['version', '-o', 'json'])) as {
      serverVersion: { gitVersion: string };
    };
    assert.equal(v.serverVersion.gitVersion, `v${release.version}`);
    const kubelet = mustKubectl(e, [
      'get',
      'node',
      MATRIX_NODE,
      '-o',
      'jsonpath={.status.nodeInfo.kubeletVersion}',
    ]);
    assert.equal(kubelet, `v${release.version}`);
  });

  it('gpu-pod: a pod with a one-GPU claim runs and sees that GPU', async () => {
    apply(e, claimTemplate('matrix-gpu', [deviceRequest('gpu', 'gpu.nvidia.com', 1)]));
    apply(e, onePod(e, 'matrix-gpu', 'matrix-gpu'));
    await running(e, 'matrix-gpu');
    const [dev] = allocatedDevices(e, podClaim(e, 'matrix-gpu', 'devs'));
    const uuid = dev?.attrs['uuid']?.string ?? '';
    assert.match(uuid, /^GPU-/);
    const s = await seen(e, 'matrix-gpu', 'main');
    assert.deepEqual(s.visible, [uuid]);
    assert.deepEqual(s.listed, [uuid]);
  });

  it('mig: a pod with a 1g.10gb claim gets a MIG device created for it', async () => {
    apply(
      e,
      claimTemplate('matrix-mig', [
        deviceRequest('mig', 'mig.nvidia.com', 1, [
          "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
        ]),
      ]),
    );
    apply(e, onePod(e, 'matrix-mig', 'matrix-mig'));
    await running(e, 'matrix-mig');
    const s = await seen(e, 'matrix-mig', 'main');
    assert.equal(s.visible.length, 1);
    assert.match(s.visible[0] ?? '', /^MIG-/);
    assert.match(mustKubectl(e, ['exec', 'matrix-mig', '--', 'nvidia-smi', '-L']), /MIG 1g\.10gb/);
  });

  it('gpu-nic: a GPU and an RDMA NIC on one PCIe root', async () => {
    apply(
      e,
      claimTemplate(
        'matrix-aligned',
        [
          deviceRequest('gpu', 'gpu.nvidia.com', 1),
          deviceRequest('nic', e.FAKEGPU_NIC_CLASS, 1, ['device.attributes["dra.net"].rdma == true']),
        ],
        'resource.kubernetes.io/pcieRoot',
      ),
    );
    apply(e, onePod(e, 'matrix-aligned', 'matrix-aligned'));
    await running(e, 'matrix-aligned');
    const devs = allocatedDevices(e, podClaim(e, 'matrix-aligned', 'devs'));
    assert.deepEqual(devs.map((d) => d.driver).sort(), ['dra.net', 'gpu.nvidia.com']);
    const roots = new Set(devs.map((d) => d.attrs['resource.kubernetes.io/pcieRoot']?.string));
    assert.equal(roots.size, 1, [...roots].join(' '));
  });

  it(`fleet: ${MATRIX_KWOK_NODES} KWOK nodes published, and a claim on one of them allocated`, async () => {
    await eventually(
      `slices of ${MATRIX_KWOK_NODES} KWOK nodes`,
      () => {
        const nodes = mustKubectl(e, [
          'get',
          'resourceslices',
          '--field-selector=spec.driver=gpu.nvidia.com',
          '-o',
          'jsonpath={.items[*].spec.nodeName}',
        ]);
        const kwok = new Set(nodes.split(' ').filter((n) => n.startsWith('kwok-gpu-')));
        return kwok.size === MATRIX_KWOK_NODES ? true : undefined;
      },
      120_000,
    );
    apply(e, claimTemplate('matrix-kwok', [deviceRequest('gpu', 'gpu.nvidia.com', 8)]));
    apply(
      e,
      onePod(e, 'matrix-kwok', 'matrix-kwok', {
        nodeSelector: { type: 'kwok' },
        tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
      }),
    );
    await running(e, 'matrix-kwok');
    const devs = allocatedDevices(e, podClaim(e, 'matrix-kwok', 'devs'));
    assert.equal(devs.length, 8);
    const node = mustKubectl(e, ['get', 'pod', 'matrix-kwok', '-o', 'jsonpath={.spec.nodeName}']);
    assert.match(node, /^kwok-gpu-/);
  });

  it('presets: every preset, plain and with dynamic MIG, stored exactly as rendered for this release', () => {
    const failures: string[] = [];
    PRESETS.forEach((p, i) => {
      for (const dynamicMig of [false, true]) {
        const node = `matrix-${i}${dynamicMig ? '-mig' : ''}`;
        const list = render(p.name, {
          node,
          dynamicMig,
          nics: true,
          nicNumaAttribute: 'standard',
          kubernetesVersion: release.version.replace(/-.*/, ''),
        });
        const r = kubectl(e, ['create', '-o', 'name', '-f', '-'], JSON.stringify(list));
        const names = r.out.trim().split('\n').filter(Boolean);
        try {
          if (r.code !== 0) {
            failures.push(`${node} (${p.name}${dynamicMig ? ' dynamic MIG' : ''}): ${r.err.trim()}`);
            continue;
          }
          const stored = JSON.parse(mustKubectl(e, ['get', '-o', 'json', ...names])) as {
            items?: ResourceSlice[];
          } & ResourceSlice;
          const key = (s: ResourceSlice['spec']): string =>
            `${s.driver}/${s.devices?.[0]?.name ?? s.sharedCounters?.[0]?.name ?? ''}`;
          const specs = (xs: ResourceSlice[]) =>
            xs.map((s) => s.spec).sort((a, b) => key(a).localeCompare(key(b)));
          // Stored exactly as sent: a field this release dropped (its gate off) would show here.
          assert.deepEqual(specs(stored.items ?? [stored]), specs(list.items), `${p.name} ${node}`);
        } catch (err) {
          failures.push(err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err));
        } finally {
          if (names.length > 0) kubectl(e, ['delete', '--wait=false', ...names]);
        }
      }
    });
    assert.deepEqual(failures, []);
  });

  it("limits: fakegpu's table of API limits is this release's k8s.io/api constants", () => {
    const gomodcache = spawnSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).stdout.trim();
    const api = join(gomodcache, `k8s.io/api@v0.${release.version.slice(2)}`, 'resource', 'v1', 'types.go');
    const source = readFileSync(api, 'utf8');
    const constants = new Map(
      [...source.matchAll(/^\s*(?:const\s+)?([A-Z][A-Za-z]+)\s*=\s*(\d+)\b/gm)].map((m) => [
        m[1],
        Number(m[2]),
      ]),
    );
    const limits = apiLimits(version);
    const entry = [...RELEASE_LIMITS].reverse().find((r) => compareSemver(version, r.release) >= 0);
    const absent = new Set(entry?.absent ?? []);
    for (const [k, names] of Object.entries(LIMIT_CONSTANTS) as [keyof ApiLimits, readonly string[]][]) {
      const found = names.find((n) => constants.has(n));
      if (absent.has(k)) {
        assert.equal(
          found,
          undefined,
          `${k}: the table says ${release.release} has no such limit, but ${found ?? ''} exists`,
        );
        continue;
      }
      assert.ok(found, `${k}: none of ${names.join(', ')} in ${api}`);
      assert.equal(limits[k], constants.get(found), `${k} (${found})`);
    }
  });

  it("claim-status: the chart's tokens may not write another claim's allocation, reservedFor, or another driver's or node's device status", async () => {
    const checks = await claimStatusChecks(e, 'fakegpu-matrix-claims');
    // Which refused each write on this release: the table's notes say it, the assertion holds it.
    process.stdout.write(
      `# claim status on ${release.version}: ${checks.map((c) => `${c.what} → ${c.outcome}`).join('; ')}\n`,
    );
    assert.deepEqual(
      checks.filter((c) => c.outcome.startsWith('ALLOWED') || c.outcome.startsWith('REFUSED')),
      [],
    );
    // From 1.36 the API server checks allocation and driver itself (DRAResourceClaimGranularStatusAuthorization).
    const own = compareSemver(version, parseKubernetesVersion('1.36.0', 'release')) >= 0;
    const by = Object.fromEntries(checks.map((c) => [c.what, c.outcome]));
    assert.equal(by["plugin: a pending claim's allocation"], own ? 'api-server' : 'policy');
    assert.equal(by["plugin: another driver's entry"], own ? 'api-server' : 'policy');
    assert.equal(by["plugin: another node's pool"], 'policy');
  });
});
