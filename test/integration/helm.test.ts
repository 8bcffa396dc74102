import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import type { Exports } from '../../src/cluster/cluster.js';
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

  it('refuses bad values with the schema, naming the field', () => {
    const r = helm(e, ['template', 'fakegpu', chart, '--set', 'featureGates=Turbo=true']);
    assert.notEqual(r.code, 0);
    assert.match(r.err, /featureGates/);
    const nic = helm(e, ['template', 'fakegpu', chart, '--set', 'nics.numaAttribute=both']);
    assert.notEqual(nic.code, 0);
    assert.match(nic.err, /\/nics\/numaAttribute/);
  });
});
