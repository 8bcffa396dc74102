import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { FLEET_MALLOC_ENV, FLEET_NODE_FLAGS, type Exports } from '../../src/cluster/cluster.js';
import { parsePools } from '../../src/fleet/pools.js';
import { kubectl, testCluster } from '../support/cluster.js';

/** The Helm chart, linted and rendered by helm (built from source like the rest) and checked by the real API server. */
const chart = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'deploy', 'helm', 'fakegpu');

function helm(e: Exports, args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync('helm', args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      PATH: e.PATH,
      HELM_CACHE_HOME: '/tmp/fakegpu-helm-cache',
      HELM_CONFIG_HOME: '/tmp/fakegpu-helm-config',
    },
  });
  if (r.error) throw r.error;
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('Helm chart deploy/helm/fakegpu', () => {
  let e: Exports;
  before(async () => {
    e = await testCluster();
  });

  it('passes helm lint', () => {
    const r = helm(e, ['lint', chart, '--strict']);
    assert.equal(r.code, 0, r.out + r.err);
  });

  it('renders objects the real API server accepts (server-side dry run)', () => {
    const r = helm(e, [
      'template',
      'fakegpu',
      chart,
      '--kube-version',
      'v1.37.2',
      '--namespace',
      'fakegpu-system',
      '--set',
      'dynamicMig=true',
      '--set',
      'featureGates=TimeSlicingSettings=true',
    ]);
    assert.equal(r.code, 0, r.err);
    const kinds = parseAllDocuments(r.out)
      .map((d) => (d.toJS() as { kind: string }).kind)
      .sort();
    assert.deepEqual(kinds, [
      'ClusterRole',
      'ClusterRoleBinding',
      'DaemonSet',
      'DeviceClass',
      'DeviceClass',
      'DeviceClass',
      'ServiceAccount',
    ]);
    kubectl(e, ['create', 'namespace', 'fakegpu-system']);
    const applied = kubectl(e, ['apply', '--dry-run=server', '-f', '-'], r.out);
    assert.equal(applied.code, 0, applied.err);
    assert.match(r.out, /name: FAKEGPU_DYNAMIC_MIG\n\s+value: "true"/);
    assert.match(r.out, /name: NIC_DRIVER_NAME\n\s+value: "dra.net"/);
    assert.match(r.out, /expression: "device.driver == 'dra.net'"/);
  });

  it('leaves the NIC driver and its class out when nics.enabled is false', () => {
    const r = helm(e, [
      'template',
      'fakegpu',
      chart,
      '--kube-version',
      'v1.37.2',
      '--set',
      'nics.enabled=false',
    ]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /name: FAKEGPU_NO_NICS\n\s+value: "true"/);
    assert.doesNotMatch(r.out, /name: dranet/);
  });

  it('deploys the fleet with its pools map, RBAC enough for what it does, and nothing more', () => {
    const r = helm(e, [
      'template',
      'fleet',
      chart,
      '--kube-version',
      'v1.37.2',
      '--namespace',
      'fakegpu-fleet',
      '--set',
      'fleet.enabled=true',
      '--set',
      'fleet.pools.h100.profile=dgx-h100',
      '--set',
      'fleet.pools.mig.profile=dgx-a100',
      '--set',
      'fleet.pools.mig.dynamicMig=true',
      '--set',
      'fleet.qps=50',
    ]);
    assert.equal(r.code, 0, r.err);
    const docs = parseAllDocuments(r.out).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string }; data?: Record<string, string> },
    );
    const fleet = docs.filter((d) => d.metadata.name.startsWith('fleet-fleet'));
    assert.deepEqual(fleet.map((d) => d.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'Deployment',
      'ServiceAccount',
    ]);
    // The mounted map is a pools file the fleet accepts.
    const text = fleet.find((d) => d.kind === 'ConfigMap')?.data?.['pools.yaml'] ?? '';
    const pools = parsePools(text, 'ConfigMap fleet-fleet-pools');
    assert.equal(pools.label, 'fakegpu.dev/pool');
    assert.equal(pools.byName.get('mig')?.dynamicMig, true);
    assert.equal(pools.byName.get('h100')?.profile.name, 'dgx-h100');
    assert.match(r.out, /name: FAKEGPU_POOLS\n\s+value: "\/etc\/fakegpu\/pools.yaml"/);
    assert.match(r.out, /name: FAKEGPU_FLEET_QPS\n\s+value: "50"/);
    // The pod's Node runs as the local cluster and the benchmark run the fleet.
    const env = new Map(
      (
        fleet.find((d) => d.kind === 'Deployment') as unknown as {
          spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
        }
      ).spec.template.spec.containers[0]?.env.map((v) => [v.name, v.value]),
    );
    assert.equal(env.get('NODE_OPTIONS'), FLEET_NODE_FLAGS.join(' '));
    for (const [k, v] of Object.entries(FLEET_MALLOC_ENV)) assert.equal(env.get(k), v, k);
    // Applied for real (the Deployment's image cannot be built here, so its pod is not started):
    // the service account may do what the fleet does and no more.
    kubectl(e, ['create', 'namespace', 'fakegpu-fleet']);
    const applied = kubectl(e, ['apply', '-f', '-'], r.out);
    assert.equal(applied.code, 0, applied.err);
    const as = 'system:serviceaccount:fakegpu-fleet:fleet-fleet';
    const can = (verb: string, resource: string): string =>
      kubectl(e, ['auth', 'can-i', verb, resource, '--as', as]).out.trim();
    for (const v of ['list', 'watch', 'get']) assert.equal(can(v, 'nodes'), 'yes', `${v} nodes`);
    for (const v of ['list', 'watch', 'create', 'update', 'delete'])
      assert.equal(can(v, 'resourceslices.resource.k8s.io'), 'yes', `${v} resourceslices`);
    assert.equal(can('create', 'events.events.k8s.io'), 'yes');
    assert.equal(can('update', 'nodes'), 'no');
    assert.equal(can('get', 'resourceclaims.resource.k8s.io'), 'no');
    assert.equal(can('list', 'secrets'), 'no');
    kubectl(e, ['delete', '--wait=false', '-f', '-'], r.out);
    kubectl(e, ['delete', 'namespace', 'fakegpu-fleet', '--wait=false']);
  });

  it('refuses bad values with the schema, naming the field', () => {
    const r = helm(e, ['template', 'fakegpu', chart, '--set', 'featureGates=Turbo=true']);
    assert.notEqual(r.code, 0);
    assert.match(r.err, /featureGates/);
    const nic = helm(e, ['template', 'fakegpu', chart, '--set', 'nics.numaAttribute=both']);
    assert.notEqual(nic.code, 0);
    assert.match(nic.err, /\/nics\/numaAttribute/);
    const qps = helm(e, ['template', 'fakegpu', chart, '--set', 'fleet.qps=-1']);
    assert.notEqual(qps.code, 0);
    assert.match(qps.err, /\/fleet\/qps/);
    const pool = helm(e, ['template', 'fakegpu', chart, '--set', 'fleet.pools.a.dynamicMig=true']);
    assert.notEqual(pool.code, 0);
    assert.match(pool.err, /\/fleet\/pools\/a': missing property 'profile'/);
  });
});
