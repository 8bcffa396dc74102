// The end-to-end scenarios, one row each: the cluster `fakegpu cluster up` starts (its flags), the
// compiled test folders or files run against it, and the environment variable that names its directory.
// `scripts/e2e.mjs` runs them in order, one cluster at a time (they share ports).
export const SCENARIOS = [
  {
    name: 'plugin',
    what: 'end-to-end tests',
    dirEnv: 'FAKEGPU_E2E_CLUSTER_DIR',
    dir: 'e2e-cluster',
    upArgs: ['--node', 'fakegpu-e2e-node', '--profile', 'dgx-h100'],
    tests: ['e2e'],
  },
  {
    // Dynamic MIG needs its own node configuration, so it gets its own cluster.
    name: 'dynamic-mig',
    what: 'end-to-end tests, dynamic MIG',
    dirEnv: 'FAKEGPU_E2E_MIG_CLUSTER_DIR',
    dir: 'e2e-mig-cluster',
    upArgs: ['--node', 'fakegpu-mig-node', '--profile', 'dgx-h100', '--dynamic-mig'],
    tests: ['e2e-mig'],
  },
  {
    name: 'static-mig',
    what: 'end-to-end tests, static MIG',
    dirEnv: 'FAKEGPU_E2E_STATIC_MIG_CLUSTER_DIR',
    dir: 'e2e-static-mig-cluster',
    upArgs: [
      '--node',
      'fakegpu-a100-node',
      '--profile',
      { repo: 'test/fixtures/profiles/dgx-a100-mig.yaml' },
    ],
    tests: ['e2e-static-mig'],
  },
  {
    // GPU–NIC alignment: a p4d whose NICs also carry the standard NUMA key, relabelled to a GB200 midway.
    name: 'topology',
    what: 'end-to-end tests, GPU–NIC topology',
    dirEnv: 'FAKEGPU_E2E_TOPO_CLUSTER_DIR',
    dir: 'e2e-topo-cluster',
    upArgs: [
      '--node',
      'fakegpu-topo-node',
      '--profile',
      'aws-p4d.24xlarge',
      '--nic-numa-attribute',
      'standard',
    ],
    tests: ['e2e-topology'],
  },
  {
    // GPU failures: NVIDIA's health monitor and the health service on a DGX H100, and a fleet of KWOK nodes.
    name: 'faults',
    what: 'end-to-end tests, GPU failures',
    dirEnv: 'FAKEGPU_E2E_FAULTS_CLUSTER_DIR',
    dir: 'e2e-faults-cluster',
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
    tests: ['e2e-faults'],
  },
  {
    // NVIDIA v0.5.0's newer gates on a DGX H100: consumable shares, VFIO, Fabric Manager partitions, lists.
    name: 'nvidia-gates',
    what: "end-to-end tests, NVIDIA v0.5.0's gates",
    dirEnv: 'FAKEGPU_E2E_NVIDIA_CLUSTER_DIR',
    dir: 'e2e-nvidia-cluster',
    upArgs: [
      '--node',
      'fakegpu-h100-node',
      '--profile',
      'dgx-h100',
      '--feature-gates',
      'ConsumableShares=true,PassthroughSupport=true,DeviceMetadata=true,DRAListTypeAttributes=true,FabricManagerPartitioning=true',
      '--consumable-shares',
      'memory',
    ],
    tests: ['e2e-nvidia'],
  },
  {
    // ComputeDomains: a GB200 tray with NVIDIA's compute-domain side, and two KWOK NVL72 racks.
    name: 'compute-domains',
    what: 'end-to-end tests, ComputeDomains',
    dirEnv: 'FAKEGPU_E2E_CD_CLUSTER_DIR',
    dir: 'e2e-cd-cluster',
    upArgs: ['--node', 'fakegpu-gb200-node', '--profile', 'oci-bm.gpu.gb200.4', '--kwok-nodes', '36'],
    tests: ['e2e-compute-domains'],
  },
  {
    // The Helm chart: fakegpu's image imported into containerd and the chart installed; test/e2e's GPU-pod
    // checks run against its plugin pod as against the host process, then the chart is upgraded and
    // uninstalled.
    name: 'helm',
    what: 'end-to-end tests, the Helm chart',
    dirEnv: 'FAKEGPU_E2E_HELM_CLUSTER_DIR',
    dir: 'e2e-helm-cluster',
    env: { FAKEGPU_E2E_HELM: '1', FAKEGPU_E2E_CLUSTER_DIR: { sameAs: 'dir' } },
    upArgs: ['--node', 'fakegpu-e2e-node', '--profile', 'dgx-h100', '--kwok-nodes', '4', '--helm'],
    tests: ['e2e/plugin.test.js', 'e2e-helm'],
  },
  {
    // Capture and replay: the test starts and stops its two cluster directories itself, one after the other.
    name: 'capture',
    what: 'end-to-end tests, capture a cluster and replay it',
    ownClusters: {
      FAKEGPU_E2E_CAPTURE_CLUSTER_DIR: 'e2e-capture-cluster',
      FAKEGPU_E2E_REPLAY_CLUSTER_DIR: 'e2e-replay-cluster',
    },
    tests: ['e2e-capture'],
  },
  {
    // The demo on an empty cache, its binaries fetched from a release mirror served on loopback.
    name: 'releases',
    what: 'end-to-end tests, the demo from a release mirror',
    ownClusters: { FAKEGPU_E2E_RELEASES_CLUSTER_DIR: 'e2e-releases-cluster' },
    tests: ['e2e-releases'],
  },
];
