// `npm run e2e`: the end-to-end suite. Starts a local cluster whose node runs fakegpu's plugin as a DGX
// H100, runs test/e2e against it, stops it and fails if anything of it is left running; then the same
// with dynamic MIG for test/e2e-mig, with a statically partitioned A100 for test/e2e-static-mig, a
// p4d for GPU–NIC topology, GPU failures with a KWOK fleet for test/e2e-faults, and a GB200 tray with
// two KWOK NVL72 racks for test/e2e-compute-domains, fakegpu from its Helm chart for test/e2e-helm; last, test/e2e-capture captures a cluster of KWOK nodes
// and replays it in a second cluster directory.
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';
import { cacheDir, leftovers, step, testFiles, withCluster } from './suite.mjs';

bootstrap();

const files = testFiles(join(root, 'dist', 'test', 'e2e'));
if (files.length === 0) {
  process.stderr.write('fakegpu: no compiled e2e tests under dist/test/e2e\n');
  process.exit(1);
}
let ok = withCluster({
  what: 'end-to-end tests',
  dir: process.env.FAKEGPU_E2E_CLUSTER_DIR ?? join(cacheDir(), 'e2e-cluster'),
  dirEnv: 'FAKEGPU_E2E_CLUSTER_DIR',
  upArgs: ['--node', 'fakegpu-e2e-node', '--profile', 'dgx-h100'],
  files,
});
// Dynamic MIG needs its own node configuration, so it gets its own cluster, after the first is gone.
ok =
  withCluster({
    what: 'end-to-end tests, dynamic MIG',
    dir: process.env.FAKEGPU_E2E_MIG_CLUSTER_DIR ?? join(cacheDir(), 'e2e-mig-cluster'),
    dirEnv: 'FAKEGPU_E2E_MIG_CLUSTER_DIR',
    upArgs: ['--node', 'fakegpu-mig-node', '--profile', 'dgx-h100', '--dynamic-mig'],
    files: testFiles(join(root, 'dist', 'test', 'e2e-mig')),
  }) && ok;
ok =
  withCluster({
    what: 'end-to-end tests, static MIG',
    dir: process.env.FAKEGPU_E2E_STATIC_MIG_CLUSTER_DIR ?? join(cacheDir(), 'e2e-static-mig-cluster'),
    dirEnv: 'FAKEGPU_E2E_STATIC_MIG_CLUSTER_DIR',
    upArgs: [
      '--node',
      'fakegpu-a100-node',
      '--profile',
      join(root, 'test', 'fixtures', 'profiles', 'dgx-a100-mig.yaml'),
    ],
    files: testFiles(join(root, 'dist', 'test', 'e2e-static-mig')),
  }) && ok;
// GPU–NIC alignment: a p4d whose NICs also carry the standard NUMA key, relabelled to a GB200 midway.
ok =
  withCluster({
    what: 'end-to-end tests, GPU–NIC topology',
    dir: process.env.FAKEGPU_E2E_TOPO_CLUSTER_DIR ?? join(cacheDir(), 'e2e-topo-cluster'),
    dirEnv: 'FAKEGPU_E2E_TOPO_CLUSTER_DIR',
    upArgs: [
      '--node',
      'fakegpu-topo-node',
      '--profile',
      'aws-p4d.24xlarge',
      '--nic-numa-attribute',
      'standard',
    ],
    files: testFiles(join(root, 'dist', 'test', 'e2e-topology')),
  }) && ok;
// GPU failures: NVIDIA's health monitor and the health service on a DGX H100, and a fleet of KWOK nodes.
ok =
  withCluster({
    what: 'end-to-end tests, GPU failures',
    dir: process.env.FAKEGPU_E2E_FAULTS_CLUSTER_DIR ?? join(cacheDir(), 'e2e-faults-cluster'),
    dirEnv: 'FAKEGPU_E2E_FAULTS_CLUSTER_DIR',
    upArgs: [
      '--node',
      'fakegpu-faults-node',
      '--profile',
      'dgx-h100',
      '--feature-gates',
      'NVMLDeviceHealthCheck=true',
      '--health-service',
      '--kwok-nodes',
      '1000',
    ],
    files: testFiles(join(root, 'dist', 'test', 'e2e-faults')),
  }) && ok;
// ComputeDomains: a GB200 tray with NVIDIA's compute-domain side, and two KWOK NVL72 racks.
ok =
  withCluster({
    what: 'end-to-end tests, ComputeDomains',
    dir: process.env.FAKEGPU_E2E_CD_CLUSTER_DIR ?? join(cacheDir(), 'e2e-cd-cluster'),
    dirEnv: 'FAKEGPU_E2E_CD_CLUSTER_DIR',
    upArgs: ['--node', 'fakegpu-gb200-node', '--profile', 'oci-bm.gpu.gb200.4', '--kwok-nodes', '36'],
    files: testFiles(join(root, 'dist', 'test', 'e2e-compute-domains')),
  }) && ok;
// The Helm chart: fakegpu's image imported into containerd and the chart installed; test/e2e's GPU-pod
// checks run against its plugin pod as against the host process, then the chart is upgraded and uninstalled.
{
  const dir = process.env.FAKEGPU_E2E_HELM_CLUSTER_DIR ?? join(cacheDir(), 'e2e-helm-cluster');
  ok =
    withCluster({
      what: 'end-to-end tests, the Helm chart',
      dir,
      dirEnv: 'FAKEGPU_E2E_HELM_CLUSTER_DIR',
      env: { FAKEGPU_E2E_HELM: '1', FAKEGPU_E2E_CLUSTER_DIR: dir },
      upArgs: ['--node', 'fakegpu-e2e-node', '--profile', 'dgx-h100', '--kwok-nodes', '4', '--helm'],
      files: [
        join('dist', 'test', 'e2e', 'plugin.test.js'),
        ...testFiles(join(root, 'dist', 'test', 'e2e-helm')),
      ],
    }) && ok;
}
// Capture and replay: the test starts and stops its two cluster directories itself, one after the other.
{
  const dirs = {
    FAKEGPU_E2E_CAPTURE_CLUSTER_DIR:
      process.env.FAKEGPU_E2E_CAPTURE_CLUSTER_DIR ?? join(cacheDir(), 'e2e-capture-cluster'),
    FAKEGPU_E2E_REPLAY_CLUSTER_DIR:
      process.env.FAKEGPU_E2E_REPLAY_CLUSTER_DIR ?? join(cacheDir(), 'e2e-replay-cluster'),
  };
  ok =
    step(
      'end-to-end tests, capture a cluster and replay it',
      process.execPath,
      [
        '--test',
        '--test-concurrency=1',
        '--test-reporter=spec',
        ...testFiles(join(root, 'dist', 'test', 'e2e-capture')),
      ],
      { ...process.env, ...dirs },
    ) && ok;
  for (const dir of Object.values(dirs)) {
    const left = leftovers(dir);
    if (left.length > 0) {
      process.stderr.write(`fakegpu: cluster down left processes behind: ${left.join(', ')}\n`);
      ok = false;
    }
  }
}
process.exit(ok ? 0 : 1);
