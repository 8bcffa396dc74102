import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Machines } from '../../src/fleet/machines.js';
import type { List, ResourceSlice } from '../../src/kube/types/resource.js';
import { DEFAULT_RELEASE } from '../../src/model/device/release.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { PRESETS } from '../../src/model/preset/index.js';
import { takenEndpoint, unusedKubeconfig } from '../support/process.js';

const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');

function fakegpu(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  return fakegpuIn({}, ...args);
}

/** The binary with standard input, a working directory or environment of its own. */
function fakegpuIn(
  o: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv },
  ...args: string[]
): { code: number | null; stdout: string; stderr: string } {
  // A time limit: a check that regressed would otherwise leave a plugin or fleet running.
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 30_000, ...o });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function attr(list: List<ResourceSlice>, device: string, key: string): unknown {
  const d = list.items.flatMap((s) => s.spec.devices ?? []).find((x) => x.name === device);
  return d?.attributes?.[key];
}

describe('fakegpu render', () => {
  it('stops quietly when its reader does (render | head)', () => {
    const r = spawnSync(
      'sh',
      [
        '-c',
        `"${process.execPath}" "${bin}" render -p dgx-h100 -n n1 --dynamic-mig | head -c 100 >/dev/null`,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(r.status, 0);
    assert.equal(r.stderr, '', 'no EPIPE stack trace');
  });

  it('prints the p4d slices with the values the real driver publishes there', () => {
    const r = fakegpu('render', '--profile', 'aws-p4d.24xlarge', '--node', 'n1', '--output', 'json');
    assert.equal(r.code, 0, r.stderr);
    const list = JSON.parse(r.stdout) as List<ResourceSlice>;
    assert.equal(list.kind, 'List');
    const devices = list.items
      .filter((s) => s.spec.driver === 'gpu.nvidia.com')
      .flatMap((s) => s.spec.devices ?? []);
    assert.deepEqual(
      devices.map((d) => d.name),
      ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3', 'gpu-4', 'gpu-5', 'gpu-6', 'gpu-7'],
    );
    assert.deepEqual(attr(list, 'gpu-0', 'productName'), { string: 'NVIDIA A100-SXM4-40GB' });
    assert.deepEqual(attr(list, 'gpu-0', 'cudaComputeCapability'), { version: '8.0.0' });
    assert.deepEqual(attr(list, 'gpu-0', 'resource.kubernetes.io/pciBusID'), { string: '0000:10:1c.0' });
    assert.deepEqual(attr(list, 'gpu-0', 'resource.kubernetes.io/pcieRoot'), { string: 'pci0000:10' });
    assert.deepEqual(devices[0]?.capacity, { memory: { value: '40Gi' } });
    assert.equal(list.items[0]?.spec.nodeName, 'n1');
    assert.equal(list.items[0].spec.pool.name, 'n1');
  });

  it("adds DRANET's slice for the machine's NICs unless --no-nics, under the driver name given", () => {
    const r = fakegpu(
      'render',
      '-p',
      'aws-p4d.24xlarge',
      '-n',
      'n1',
      '--nic-driver-name',
      'nic.example.com',
      '-o',
      'json',
    );
    assert.equal(r.code, 0, r.stderr);
    const nics = (JSON.parse(r.stdout) as List<ResourceSlice>).items.filter(
      (s) => s.spec.driver === 'nic.example.com',
    );
    assert.equal(nics.length, 1);
    // The primary ENA (ens33) carries the default route: DRANET leaves it out.
    assert.deepEqual(
      nics[0]?.spec.devices?.map((d) => d.name),
      [
        'pci-0000-10-1b-0',
        'pci-0000-20-01-0',
        'pci-0000-20-1b-0',
        'pci-0000-90-01-0',
        'pci-0000-90-1b-0',
        'pci-0000-a0-01-0',
        'pci-0000-a0-1b-0',
      ],
    );
    const off = fakegpu('render', '-p', 'aws-p4d.24xlarge', '-n', 'n1', '--no-nics', '-o', 'json');
    assert.deepEqual(
      (JSON.parse(off.stdout) as List<ResourceSlice>).items.map((s) => s.spec.driver),
      ['gpu.nvidia.com'],
    );
    const bad = fakegpu('render', '-p', 'aws-p4d.24xlarge', '-n', 'n1', '--nic-driver-name', 'DRANET');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--nic-driver-name: "DRANET" is not a valid DRA driver name/);
    assert.equal(bad.stdout, '');
  });

  it('shows every slice the fleet publishes for the node: on a GB200 the compute-domain one too', () => {
    const machines = new Machines({
      profileLabel: 'fakegpu.dev/profile',
      dynamicMig: false,
      driverName: 'gpu.nvidia.com',
      release: DEFAULT_RELEASE,
      nics: { driverName: 'dra.net', standardNumaNode: false },
      computeDomains: true,
      log: pino({ level: 'silent' }),
    });
    for (const profile of ['oci-bm.gpu.gb200.4', 'azure-nd-gb300-v6', 'dgx-h100']) {
      const r = fakegpu('render', '-p', profile, '-n', 'n1', '-o', 'json');
      assert.equal(r.code, 0, r.stderr);
      const desired = machines.desired('n1', { profile, pool: null });
      assert.ok(Array.isArray(desired), profile);
      assert.deepEqual(
        (JSON.parse(r.stdout) as List<ResourceSlice>).items.map((s) => [s.metadata.generateName, s.spec]),
        desired.map((s) => [s.generateName, JSON.parse(s.spec(1)) as unknown]),
        profile,
      );
      assert.equal(
        desired.some((s) => s.driver === 'compute-domain.nvidia.com'),
        profile !== 'dgx-h100',
        profile,
      );
    }
    const off = fakegpu(
      'render',
      '-p',
      'oci-bm.gpu.gb200.4',
      '-n',
      'n1',
      '--no-compute-domains',
      '-o',
      'json',
    );
    assert.deepEqual(
      (JSON.parse(off.stdout) as List<ResourceSlice>).items.map((s) => s.spec.driver),
      ['gpu.nvidia.com', 'dra.net'],
    );
  });

  it('topo draws roots, GPUs and NICs and says which alignments a claim can get', () => {
    const r = fakegpu('topo', '-p', 'oci-bm.gpu.gb200.4');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^NUMA 0$/m);
    assert.match(r.stdout, /pci0008:00\n.*gpu-0 {2}0008:06:00\.0 {2}NVIDIA GB200/);
    assert.match(r.stdout, /pcieRoot: impossible, no root holds both a GPU and an RDMA NIC/);
    const j = fakegpu('topo', '-p', 'aws-p4d.24xlarge', '-o', 'json');
    const t = JSON.parse(j.stdout) as { alignment: { sharedRoots: unknown[] } };
    assert.equal(t.alignment.sharedRoots.length, 4);
  });

  it('names dynamic MIG devices as the real driver does', () => {
    const r = fakegpu('render', '-p', 'dgx-a100', '-n', 'n1', '--dynamic-mig', '-o', 'json');
    assert.equal(r.code, 0, r.stderr);
    const list = JSON.parse(r.stdout) as List<ResourceSlice>;
    const names = list.items.flatMap((s) => s.spec.devices ?? []).map((d) => d.name);
    assert.ok(names.includes('gpu-0-mig-1g5gb-19-0'));
    assert.ok(names.includes('gpu-7-mig-7g40gb-0-0'));
    assert.ok(!names.includes('gpu-0'), 'Ampere in MIG mode offers no full GPU');
    assert.equal(list.items[0]?.spec.sharedCounters?.length, 8);
  });

  it('writes YAML by default', () => {
    const r = fakegpu('render', '-p', 'aws-g4dn.xlarge', '-n', 'n1');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^apiVersion: v1\nkind: List\n/);
    assert.match(r.stdout, /productName:\n\s+string: Tesla T4/);
  });
});

describe('bad input on the command line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cli-'));
  const profile = (name: string, spec: string): string => {
    const p = join(dir, `${name}.yaml`);
    writeFileSync(
      p,
      `apiVersion: fakegpu.dev/v1alpha1\nkind: MachineProfile\nmetadata: {name: ${name}}\nspec:\n${spec}`,
    );
    return p;
  };
  const cases: [string, string[], RegExp][] = [
    [
      'a Kubernetes release fakegpu does not build',
      ['cluster', 'up', '--dir', '/tmp/fakegpu-never', '--kubernetes-version', '1.33'],
      /^fakegpu: --kubernetes-version: "1\.33" is not a release fakegpu builds; it builds 1\.34 \(1\.34\.4\), 1\.35 \(1\.35\.4\), 1\.36 \(1\.36\.3\), 1\.37 \(1\.37\.2\)\n$/,
    ],
    [
      'a Kubernetes release the module proxy cannot build yet',
      ['cluster', 'up', '--dir', '/tmp/fakegpu-never', '--kubernetes-version', '1.38'],
      /^fakegpu: --kubernetes-version: Kubernetes 1\.38\.0-beta\.0 cannot be built yet: the Go module proxy does not serve k8s\.io\/apiextensions-api v0\.38\.0-beta\.0, .*\n$/,
    ],
    [
      'unknown preset',
      ['render', '-p', 'nope', '-n', 'n1'],
      /^fakegpu: --profile: unknown preset "nope"; known presets: dgx-a100, .*azure-nc64as-t4-v3\n$/,
    ],
    [
      'unknown model',
      ['render', '-p', profile('m', '  gpus: [{model: X1}]\n'), '-n', 'n1'],
      /^fakegpu: spec\.gpus\[0\]\.model: unknown GPU model "X1"; known models: .*\n$/,
    ],
    [
      'malformed bus ID',
      ['render', '-p', profile('b', '  gpus: [{model: T4, busId: "zz:00.0"}]\n'), '-n', 'n1'],
      /^fakegpu: spec\.gpus\[0\]\.busId: "zz:00\.0" is not a PCI bus ID; .*\n$/,
    ],
    [
      'duplicate bus IDs',
      ['validate', profile('d', '  gpus: [{model: T4, busId: "3b:00.0"}, {model: T4, busId: "3b:00.0"}]\n')],
      /duplicate bus ID "0000:3b:00\.0"/,
    ],
    [
      'MIG without MIG',
      ['validate', profile('g', '  gpus: [{model: A10G, mig: {layout: "1g.5gb"}}]\n')],
      /^fakegpu: spec\.gpus\[0\]\.mig: A10G \(NVIDIA A10G\) does not support MIG\n$/,
    ],
    [
      'overlapping MIG',
      ['validate', profile('o', '  gpus: [{model: A100-SXM4-40GB, mig: {layout: "7g.40gb, 1g.5gb"}}]\n')],
      /no free placement for 1g\.5gb/,
    ],
    [
      'driver version',
      ['render', '-p', 'dgx-h100', '-n', 'n1', '--driver-version', 'banana'],
      /^fakegpu: --driver-version: "banana" is not a version; .*\n$/,
    ],
    [
      'node name',
      ['render', '-p', 'dgx-h100', '-n', 'Node_1'],
      /^fakegpu: --node-name: "Node_1" is not a valid node name; .*\n$/,
    ],
    [
      'driver name',
      ['render', '-p', 'dgx-h100', '-n', 'n1', '--driver-name', 'GPU'],
      /^fakegpu: --driver-name: "GPU" is not a valid DRA driver name; .*\n$/,
    ],
    [
      'output format',
      ['render', '-p', 'dgx-h100', '-n', 'n1', '-o', 'xml'],
      /^fakegpu: -o, --output: "xml" is not an output format of render; allowed: yaml, json \(see 'fakegpu render --help'\)\n$/,
    ],
    [
      'release',
      ['render', '-p', 'dgx-h100', '-n', 'n1', '--dra-driver-release', '9.9'],
      /^fakegpu: --dra-driver-release: unknown NVIDIA DRA driver release "9\.9"; known releases: 25\.12, 0\.4, 0\.5\n$/,
    ],
    [
      'kubernetes version',
      ['render', '-p', 'dgx-h100', '-n', 'n1', '--kubernetes-version', 'next'],
      /^fakegpu: --kubernetes-version: "next" is not a Kubernetes version; expected <major>\.<minor>\[\.<patch>\] as the API server reports it, e\.g\. "1\.35\.0" or "v1\.34\.2-eks-113cf36"\n$/,
    ],
    [
      'NIC NUMA attribute',
      ['render', '-p', 'dgx-h100', '-n', 'n1', '--nic-numa-attribute', 'both'],
      /^fakegpu: --nic-numa-attribute: "both" is not allowed; allowed: dranet, standard \(see 'fakegpu render --help'\)\n$/,
    ],
    [
      'plugin NIC driver name',
      ['plugin', '--node-name', 'n1', '-p', 'dgx-h100', '--nic-driver-name', 'DRANET'],
      /^fakegpu: --nic-driver-name: "DRANET" is not a valid DRA driver name; .*\n$/,
    ],
    [
      'KWOK node count',
      ['cluster', 'up', '--kwok-nodes', '100001'],
      /^fakegpu: --kwok-nodes: "100001" is not an integer from 0 to 100000\n$/,
    ],
    [
      'KWOK controllers out of range',
      ['cluster', 'up', '--kwok-nodes', '100', '--kwok-controllers', '65'],
      /^fakegpu: --kwok-controllers: "65" is not an integer from 1 to 64\n$/,
    ],
    [
      'more KWOK controllers than nodes',
      ['cluster', 'up', '--kwok-nodes', '2', '--kwok-controllers', '3'],
      /^fakegpu: --kwok-controllers: 3 controllers for 2 KWOK node\(s\); give 1 to 2, at most one per node\n$/,
    ],
    [
      'KWOK controllers without nodes',
      ['cluster', 'up', '--kwok-controllers', '2'],
      /^fakegpu: --kwok-controllers: needs --kwok-nodes or --kwok-pools\n$/,
    ],
    [
      'KWOK controllers beside Karpenter',
      ['cluster', 'up', '--with', 'karpenter', '--kwok-nodes', '4', '--kwok-controllers', '2'],
      /^fakegpu: --kwok-controllers: 2 with --with karpenter: the nodes Karpenter launches carry no fakegpu\.dev\/kwok-partition label, so no controller would manage them; give 1\n$/,
    ],
    [
      'fleet replicas out of range',
      ['cluster', 'up', '--kwok-nodes', '4', '--fleet-replicas', '30'],
      /^fakegpu: --fleet-replicas: "30" is not an integer from 1 to 16\n$/,
    ],
    [
      'fleet replicas without the fleet',
      ['cluster', 'up', '--fleet-replicas', '3'],
      /^fakegpu: --fleet-replicas: 3 needs the fleet: give --kwok-nodes, without --no-fleet\n$/,
    ],
    [
      'fleet shards out of range',
      ['fleet', '--shards', '5000'],
      /^fakegpu: --shards: "5000" is not an integer from 0 to 1024\n$/,
    ],
    [
      'fleet shards without the Leases',
      ['fleet', '--shards', '4', '--leader-elect', 'false'],
      /^fakegpu: --shards: 4 needs the Leases; it cannot be used with --leader-elect=false\n$/,
    ],
    [
      'fleet shards with a lease name too long for a label',
      ['fleet', '--shards', '4', '--leader-election-lease-name', 'x'.repeat(64)],
      /^fakegpu: --leader-election-lease-name: "x{64}" is longer than 63 characters; with --shards it is also a label value\n$/,
    ],
    [
      'KWOK profile without nodes',
      ['cluster', 'up', '--kwok-profile', 'dgx-h100'],
      /^fakegpu: --kwok-profile: needs --kwok-nodes\n$/,
    ],
    [
      'KWOK without fleet, without nodes',
      ['cluster', 'up', '--no-fleet'],
      /^fakegpu: --no-fleet: needs --kwok-nodes\n$/,
    ],
    [
      'an unknown --with project',
      ['cluster', 'up', '--with', 'karpenter,volcano'],
      /^fakegpu: --with: unknown project "volcano"; known: karpenter, kueue\n$/,
    ],
    [
      '--with and --no-fleet',
      ['cluster', 'up', '--with', 'karpenter', '--no-fleet', '--kwok-nodes', '1'],
      /^fakegpu: --no-fleet: leave it out with --with: the fleet gives an autoscaler's nodes their GPUs\n$/,
    ],
    [
      'cluster gate the release does not know',
      ['cluster', 'up', '--feature-gates', 'Turbo=true'],
      /^fakegpu: --feature-gates: unrecognized feature gate: Turbo \(release 0\.5 has TimeSlicingSettings, .*\)\n$/,
    ],
    [
      'cluster health gate with dynamic MIG',
      ['cluster', 'up', '-p', 'dgx-h100', '--dynamic-mig', '--feature-gates', 'NVMLDeviceHealthCheck=true'],
      /^fakegpu: --feature-gates with --dynamic-mig: feature gate DynamicMIG is currently mutually exclusive with NVMLDeviceHealthCheck\n$/,
    ],
    [
      'cluster health service without the gate',
      ['cluster', 'up', '-p', 'dgx-h100', '--health-service'],
      /^fakegpu: --health-service: needs --feature-gates NVMLDeviceHealthCheck=true: health is what its monitor finds\n$/,
    ],
    [
      'plugin health service without the gate',
      ['plugin', '--node-name', 'n1', '-p', 'dgx-h100', '--health-service'],
      /^fakegpu: --health-service: needs the feature gate NVMLDeviceHealthCheck=true: health is what its monitor finds\n$/,
    ],
    [
      'plugin health gate with the DynamicMIG gate',
      [
        'plugin',
        '--node-name',
        'n1',
        '-p',
        'dgx-h100',
        '--feature-gates',
        'NVMLDeviceHealthCheck=true,DynamicMIG=true',
      ],
      /^fakegpu: --feature-gates: feature gate DynamicMIG is currently mutually exclusive with NVMLDeviceHealthCheck\n$/,
    ],
    [
      'plugin consumable shares without the gate',
      ['plugin', '--node-name', 'n1', '-p', 'dgx-h100', '--consumable-shares', 'memory'],
      /^fakegpu: --consumable-shares: --consumable-shares requires feature gate ConsumableShares to be enabled\n$/,
    ],
    [
      'fleet consumable shares not a mode',
      ['fleet', '--feature-gates', 'ConsumableShares=true', '--consumable-shares', '0'],
      /^fakegpu: --consumable-shares: invalid value for --consumable-shares: "0" \(must be 'disabled', 'memory', 'unlimited', or a positive integer\)\n$/,
    ],
    [
      'render consumable shares without the gate',
      ['render', '-p', 'dgx-h100', '-n', 'n1', '--consumable-shares', '4'],
      /^fakegpu: --consumable-shares: --consumable-shares requires feature gate ConsumableShares to be enabled\n$/,
    ],
    [
      'export karpenter consumable shares without the gate',
      ['export', 'karpenter', '--consumable-shares', 'memory'],
      /^fakegpu: --consumable-shares: --consumable-shares requires feature gate ConsumableShares to be enabled\n$/,
    ],
    [
      'export karpenter gates NVIDIA forbids together',
      ['export', 'karpenter', '--feature-gates', 'NVMLDeviceHealthCheck=true,DynamicMIG=true'],
      /^fakegpu: --feature-gates: feature gate DynamicMIG is currently mutually exclusive with NVMLDeviceHealthCheck\n$/,
    ],
    [
      'cluster consumable shares without the gate',
      ['cluster', 'up', '-p', 'dgx-h100', '--consumable-shares', 'memory'],
      /^fakegpu: --consumable-shares: --consumable-shares requires feature gate ConsumableShares to be enabled\n$/,
    ],
    [
      'fleet ignored XIDs',
      ['fleet', '--additional-xids-to-ignore', '79,x'],
      /^fakegpu: --additional-xids-to-ignore: "x" is not an XID; expected a comma-separated list of numbers\n$/,
    ],
    [
      'fleet concurrency',
      ['fleet', '--concurrency', '0'],
      /^fakegpu: --concurrency: "0" is not an integer >= 1\n$/,
    ],
    ['fleet rate limit', ['fleet', '--qps', 'fast'], /^fakegpu: --qps: "fast" is not an integer >= 0\n$/],
    [
      'fleet default profile',
      ['fleet', '-p', 'dgx-h999'],
      /^fakegpu: --profile: unknown preset "dgx-h999"; known presets: .*\n$/,
    ],
    [
      'fleet leader election',
      ['fleet', '--leader-elect', 'maybe'],
      /^fakegpu: --leader-elect: "maybe" is not a boolean; expected true or false\n$/,
    ],
    [
      'controller lease namespace',
      ['compute-domain-controller', '--leader-election-namespace', 'Kube_System'],
      /^fakegpu: --leader-election-namespace: "Kube_System" is not a valid namespace; expected an RFC 1123 label .*\n$/,
    ],
    [
      "NVIDIA's log verbosity, controller",
      ['compute-domain-controller', '--v', '11'],
      /^fakegpu: --v: "11" is not an integer from 0 to 10\n$/,
    ],
    [
      "NVIDIA's log verbosity, plugin",
      ['plugin', '--node-name', 'n1', '-p', 'dgx-h100', '--v', 'loud'],
      /^fakegpu: --v: "loud" is not an integer from 0 to 10\n$/,
    ],
    [
      'controller lease name',
      ['compute-domain-controller', '--leader-election-lease-name', 'a/b'],
      /^fakegpu: --leader-election-lease-name: "a\/b" is not a valid Lease name; expected an RFC 1123 subdomain .*\n$/,
    ],
  ];
  for (const [name, args, stderr] of cases) {
    it(`${name}: exit non-zero, one line on stderr, nothing on stdout`, () => {
      const r = fakegpu(...args);
      assert.notEqual(r.code, 0);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, stderr);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
    });
  }
});

describe('fakegpu profiles and validate', () => {
  it('lists every preset as JSON with provenance', () => {
    const r = fakegpu('profiles', '--output', 'json');
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as {
      name: string;
      instanceType: string | null;
      gpus: { model: string; count: number }[];
      provenance: Record<string, string>;
    }[];
    const p4d = rows.find((x) => x.name === 'aws-p4d.24xlarge');
    assert.deepEqual(p4d?.gpus, [{ model: 'A100-SXM4-40GB', count: 8 }]);
    assert.equal(p4d.provenance['pcieRoots'], 'confirmed');
    assert.equal(rows.length, PRESETS.length);
    const types = Object.fromEntries(rows.map((x) => [x.name, x.instanceType]));
    assert.equal(types['aws-p5.48xlarge'], 'p5.48xlarge');
    assert.equal(types['oci-bm.gpu.gb200.4'], 'BM.GPU.GB200.4');
    assert.equal(types['dgx-h100'], null);
    assert.match(fakegpu('profiles').stdout, /^aws-p5\.48xlarge +p5\.48xlarge +8x H100-SXM5-80GB /m);
  });
  it('renders an instance type as the preset the fleet maps it to; an unknown type is one line', () => {
    const byType = fakegpu('render', '--instance-type', 'p5.48xlarge', '-n', 'node-a');
    assert.equal(byType.code, 0, byType.stderr);
    assert.equal(byType.stdout, fakegpu('render', '-p', 'aws-p5.48xlarge', '-n', 'node-a').stdout);
    const unknown = fakegpu('render', '--instance-type', 'm5.large', '-n', 'node-a');
    assert.equal(unknown.code, 1);
    assert.match(
      unknown.stderr,
      /^fakegpu: --instance-type: unknown instance type "m5\.large"; instance types with a preset: p4d\.24xlarge, .*\n$/,
    );
    const both = fakegpu('render', '--instance-type', 'p5.48xlarge', '-p', 'dgx-h100', '-n', 'node-a');
    assert.equal(both.stderr, 'fakegpu: --instance-type: give one of --profile and --instance-type\n');
  });
  it("export karpenter-kwok writes the KWOK provider's instance types as JSON, GPUs one way", () => {
    const gpusOf = (...args: string[]): string | undefined => {
      const r = fakegpu('export', 'karpenter-kwok', ...args);
      assert.equal(r.code, 0, r.stderr);
      const types = JSON.parse(r.stdout) as { name: string; resources: Record<string, string> }[];
      return types.find((t) => t.name === 'g4dn.12xlarge')?.resources['nvidia.com/gpu'];
    };
    assert.equal(gpusOf(), undefined);
    assert.equal(gpusOf('--gpus', 'extended-resource'), '4');
    const bad = fakegpu('export', 'karpenter-kwok', '--gpus', 'both');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^fakegpu: --gpus: "both" is not allowed; allowed: dra, extended-resource /);
  });
  it('cluster up refuses --karpenter-gpus without Karpenter, before anything starts', () => {
    const r = fakegpu('cluster', 'up', '--karpenter-gpus', 'extended-resource', '--dir', '/nonexistent/x');
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'fakegpu: --karpenter-gpus: "extended-resource" needs --with karpenter\n');
  });
  it('validates a good profile and summarises it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cli-'));
    const p = join(dir, 'ok.yaml');
    writeFileSync(
      p,
      'apiVersion: fakegpu.dev/v1alpha1\nkind: MachineProfile\nmetadata: {name: lab}\nspec:\n  preset: dgx-a100\n  mig: {layout: "3g.20gb x2"}\n',
    );
    const r = fakegpu('validate', p);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /valid MachineProfile "lab": 8x A100-SXM4-40GB; 8 NIC\(s\); driver 580\.126\.20; MIG on 8 GPU\(s\) with 16 instance\(s\)/,
    );
  });
});

describe('fakegpu cluster up refuses to run where it cannot', () => {
  it('--dynamic-mig without --profile or KWOK nodes: says what it needs, starts nothing', () => {
    const r = fakegpu('cluster', 'up', '--dir', '/tmp/fakegpu-never', '--dynamic-mig');
    assert.notEqual(r.code, 0);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      'fakegpu: --dynamic-mig: needs --profile or KWOK nodes (--kwok-nodes, --kwok-pools, --with karpenter): it is a setting of the node plugin and the fleet\n',
    );
  });

  it('as a user other than root: says root is needed, prints no exports', () => {
    const r = spawnSync(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        process.execPath,
        bin,
        'cluster',
        'up',
        '--dir',
        '/tmp/fakegpu-nobody',
      ],
      {
        encoding: 'utf8',
      },
    );
    assert.notEqual(r.status, 0);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^fakegpu: cluster up: the local cluster runs a kubelet and containerd, which need root; run it as root/,
    );
  });
});

describe('bench:fleet flags', () => {
  const bench = join(REPO_ROOT, 'dist', 'bench', 'fleet.js');
  // Each is refused before a cluster starts: the test would otherwise take minutes.
  for (const [what, args, message] of [
    ['no nodes', ['--nodes', '0'], /^bench\/fleet: --nodes: "0" is not an integer from 1 to 100000\n$/],
    ['nodes not a number', ['--nodes', 'many'], /^bench\/fleet: --nodes: "many" is not an integer/],
    ['fill above 1', ['--fill', '1.5'], /^bench\/fleet: --fill: "1.5" is not a number from 0 to 1\n$/],
    ['fill empty', ['--fill', ''], /^bench\/fleet: --fill: "" is not a number from 0 to 1\n$/],
    ['ceiling in flight', ['--ceiling-in-flight', '0'], /^bench\/fleet: --ceiling-in-flight: "0" is not/],
    ['no rounds', ['--rounds', '0'], /^bench\/fleet: --rounds: "0" is not an integer from 1 to 10\n$/],
    ['unknown profile', ['--profile', 'dgx-h999'], /^bench\/fleet: --profile: unknown preset "dgx-h999"/],
    [
      'an existing cluster without --replicas',
      ['--kubeconfig', '/nonexistent'],
      /^bench\/fleet: --kubeconfig: runs only with --replicas: the rounds also measure the local control plane's processes\n$/,
    ],
  ] as const) {
    it(`refuses ${what}`, () => {
      const r = spawnSync(process.execPath, [bench, 'fleet', ...args], { encoding: 'utf8' });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, message);
    });
  }
});

describe('bench:autoscale flags', () => {
  const bench = join(REPO_ROOT, 'dist', 'bench', 'autoscale.js');
  // Each is refused before a cluster starts: the test would otherwise take minutes.
  for (const [what, args, message] of [
    ['no pods', ['--pods', '0'], /^bench\/autoscale: --pods: "0" is not an integer from 1 to 5000\n$/],
    [
      'an instance type without a preset',
      ['--instance-type', 'm5.large'],
      /^bench\/autoscale: --instance-type: unknown instance type "m5\.large"; instance types with a preset: p4d\.24xlarge, /,
    ],
  ] as const) {
    it(`refuses ${what}`, () => {
      const r = spawnSync(process.execPath, [bench, 'autoscale', ...args], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, message);
    });
  }
});

describe('bench:sched flags', () => {
  const bench = join(REPO_ROOT, 'dist', 'bench', 'sched.js');
  // Each is refused before a cluster starts: the test would otherwise take minutes.
  for (const [what, args, message] of [
    ['no nodes', ['--nodes', '0'], /^bench\/sched: --nodes: "0" is not an integer from 1 to 20000\n$/],
    ['unknown variant', ['--variant', 'fast'], /^bench\/sched: --variant: "fast" is not one of plain, cel,/],
    ['fill 0', ['--fill', '0'], /^bench\/sched: --fill: "0" is not a number in \(0, 1\]\n$/],
    ['negative fill rate', ['--fill-qps', '-1'], /^bench\/sched: --fill-qps: "-1" is not an integer/],
    ['no churn rate', ['--churn-qps', '0'], /^bench\/sched: --churn-qps: "0" is not an integer from 1/],
    [
      'a MIG partition the machine lacks',
      ['--variant', 'mig', '--mig-profile', '9g.99gb'],
      /^bench\/sched: --mig-profile: "9g.99gb" is not a MIG partition of dgx-h100; it has 1g.10gb,/,
    ],
    [
      'NIC alignment without NICs',
      ['--variant', 'nic-aligned', '--profile', 'aws-g4dn.xlarge'],
      /^bench\/sched: --variant: nic-aligned needs GPUs and RDMA NICs under one PCIe root/,
    ],
    [
      'a bad node selector',
      ['--node-selector', 'a=(b'],
      /^bench\/sched: --node-selector: "a=\(b": unbalanced parentheses; expected terms such as k=v/,
    ],
    ['unknown profile', ['--profile', 'dgx-h999'], /^bench\/sched: --profile: unknown preset "dgx-h999"/],
  ] as const) {
    it(`refuses ${what}`, () => {
      const r = spawnSync(process.execPath, [bench, 'sched', ...args], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, message);
    });
  }
});

describe('profile files by any name, and standard input', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cli-'));
  const json = JSON.stringify({
    apiVersion: 'fakegpu.dev/v1alpha1',
    kind: 'MachineProfile',
    metadata: { name: 'j' },
    spec: { gpus: [{ model: 'T4' }] },
  });
  writeFileSync(join(dir, 'my.json'), json);

  it('validate my.json (no slash) reads the file, not a preset', () => {
    const r = fakegpuIn({ cwd: dir }, 'validate', 'my.json');
    assert.equal(r.stderr, '');
    assert.equal(
      r.stdout,
      'my.json: valid MachineProfile "j": 1x T4; 0 NIC(s); driver 580.126.20; MIG on 0 GPU(s) with 0 instance(s)\n',
    );
    assert.equal(r.code, 0);
  });

  it('validate - reads standard input', () => {
    const r = fakegpuIn({ input: json }, 'validate', '-');
    assert.equal(r.stderr, '');
    assert.equal(
      r.stdout,
      'stdin: valid MachineProfile "j": 1x T4; 0 NIC(s); driver 580.126.20; MIG on 0 GPU(s) with 0 instance(s)\n',
    );
  });

  it('render -p - reads standard input; its YAML errors name stdin', () => {
    const r = fakegpuIn({ input: json }, 'render', '-p', '-', '-n', 'n1', '-o', 'json');
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as List<ResourceSlice>).items.length, 1);
    const bomb = `apiVersion: fakegpu.dev/v1alpha1\nkind: MachineProfile\nmetadata: {name: b}\nspec:\n  description: &a x\n  gpus: [${Array(101).fill('{model: *a}').join(', ')}]\n`;
    const bad = fakegpuIn({ input: bomb }, 'validate', '-');
    assert.deepEqual(bad, {
      code: 1,
      stdout: '',
      stderr:
        'fakegpu: stdin: not valid YAML: more than 100 alias expansions (*name); at most 100 are allowed, as a guard against alias bombs; write the values out\n',
    });
  });

  it('a missing my.json is a missing file, not an unknown preset', () => {
    const r = fakegpuIn({ cwd: dir }, 'validate', 'nope.json');
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^fakegpu: nope\.json: cannot read profile file "nope\.json" \(ENOENT\); give a preset name/,
    );
  });
});

describe('validate and render agree', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cli-'));

  it('a driver version too large to publish is refused by both, in the same line', () => {
    const p = join(dir, 'huge.yaml');
    writeFileSync(
      p,
      'apiVersion: fakegpu.dev/v1alpha1\nkind: MachineProfile\nmetadata: {name: h}\nspec:\n  gpus: [{model: T4}]\n  driver: {version: "99999999999999999999999.1.1"}\n',
    );
    const line =
      'fakegpu: spec.driver.version: "99999999999999999999999.1.1" has a number above 9007199254740991; each part of a version must be at most that, e.g. "580.126.20"\n';
    assert.deepEqual(fakegpu('validate', p), { code: 1, stdout: '', stderr: line });
    assert.deepEqual(fakegpu('render', '-p', p, '-n', 'n1'), { code: 1, stdout: '', stderr: line });
  });

  it('--kubernetes-version takes what real API servers report, suffixes ignored', () => {
    for (const [real, plain] of [
      ['v1.34.2-eks-113cf36', '1.34.2'],
      ['v1.34.1+k3s1', '1.34.1'],
      ['1.35.0-rc.1', '1.35.0'],
    ] as const) {
      const r = fakegpu(
        'render',
        '-p',
        'dgx-h100',
        '-n',
        'n1',
        '--dynamic-mig',
        '--kubernetes-version',
        real,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.equal(
        r.stdout,
        fakegpu('render', '-p', 'dgx-h100', '-n', 'n1', '--dynamic-mig', '--kubernetes-version', plain)
          .stdout,
      );
    }
  });
});

describe('names and sizes the API server would refuse', () => {
  it("--node so long that the slices' generateName passes 253 characters", () => {
    const node = 'a'.repeat(232);
    const r = fakegpu('render', '-p', 'dgx-h100', '-n', node);
    assert.deepEqual(r, {
      code: 1,
      stdout: '',
      stderr: `fakegpu: --node-name: "${'a'.repeat(80)}"… (232 characters) is too long: the slices of driver gpu.nvidia.com would have a generateName of 254 characters and the API server allows 253; the node name can have at most 231 characters\n`,
    });
    const fits = fakegpu('render', '-p', 'dgx-h100', '-n', 'a'.repeat(231), '-o', 'json');
    assert.equal(fits.code, 0, fits.stderr);
    const names = (JSON.parse(fits.stdout) as List<ResourceSlice>).items.map(
      (s) => s.metadata.generateName ?? '',
    );
    assert.ok(names.every((n) => n.length <= 253));
  });

  it('render --dynamic-mig of more GPUs than a node has: one line, not a RangeError', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cli-'));
    const p = join(dir, 'big.yaml');
    writeFileSync(
      p,
      `apiVersion: fakegpu.dev/v1alpha1\nkind: MachineProfile\nmetadata: {name: big}\nspec:\n  gpus: [${Array(157).fill('{model: H100-SXM5-80GB, count: 64}').join(', ')}]\n`,
    );
    const line =
      "fakegpu: spec.gpus: 10048 GPUs; a node has at most 255, as NVIDIA's driver gives GPUs the device minors 0-254 (minor 255 is /dev/nvidiactl)\n";
    assert.deepEqual(fakegpu('validate', p), { code: 1, stdout: '', stderr: line });
    assert.deepEqual(fakegpu('render', '-p', p, '-n', 'n1', '--dynamic-mig', '-o', 'json'), {
      code: 1,
      stdout: '',
      stderr: line,
    });
  });
});

describe('usage errors exit 2, bad input exits 1, each in one line', () => {
  const usage: [string, string[], string][] = [
    [
      'unknown option of a subcommand',
      ['render', '-p', 'dgx-h100', '-n', 'n1', '--bogus'],
      "fakegpu: unknown option '--bogus' (see 'fakegpu render --help')\n",
    ],
    [
      'missing argument',
      ['validate'],
      "fakegpu: missing required argument 'file' (see 'fakegpu validate --help')\n",
    ],
    [
      'unknown command, with the suggestion on the same line',
      ['nope'],
      "fakegpu: unknown command 'nope' (Did you mean topo?) (see 'fakegpu --help')\n",
    ],
    [
      'help for an unknown command',
      ['help', 'nope'],
      'fakegpu: help: unknown command "nope"; commands: profiles, render, export, validate, topo, diff, capture, fleet, cluster, image, plugin, compute-domain-controller, demo, fault, report, uninstall-check (see \'fakegpu --help\')\n',
    ],
    [
      'help for an unknown subcommand',
      ['cluster', 'help', 'nope'],
      'fakegpu: cluster help: unknown command "nope"; commands: up, down, restart, status (see \'fakegpu cluster --help\')\n',
    ],
    [
      'a missing required option of the plugin',
      ['plugin', '-p', 'dgx-h100'],
      "fakegpu: required option '-n, --node-name <name>' not specified (see 'fakegpu plugin --help')\n",
    ],
  ];
  for (const [what, args, stderr] of usage) {
    it(`${what}: exit 2`, () => {
      assert.deepEqual(fakegpu(...args), { code: 2, stdout: '', stderr });
    });
  }

  it('a megabyte of --driver-name is quoted cut', () => {
    const r = fakegpu('render', '-p', 'dgx-h100', '-n', 'n1', '--driver-name', 'x'.repeat(100_000));
    assert.deepEqual(r, {
      code: 1,
      stdout: '',
      stderr: `fakegpu: --driver-name: "${'x'.repeat(80)}"… (100000 characters) is not a valid DRA driver name; expected a lower-case DNS subdomain of at most 63 characters with a domain, e.g. "gpu.nvidia.com"\n`,
    });
  });

  it('bad input: exit 1', () => {
    assert.deepEqual(fakegpu('render', '-p', 'dgx-h100', '-n', 'Node_1').code, 1);
    assert.deepEqual(fakegpu('cluster', 'up', '--kwok-nodes', 'x').code, 1);
  });

  it('--version prints the package version', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.deepEqual(fakegpu('--version'), { code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it('help for a known command still shows it', () => {
    const r = fakegpu('help', 'render');
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Usage: fakegpu render \[options\]/);
  });

  it('--no-nics on every command that publishes, the fleet included; --http-endpoint help lists /readyz', () => {
    const fleet = fakegpu('fleet', '--no-nics', '--kubeconfig', '/nope');
    assert.deepEqual(fleet, {
      code: 1,
      stdout: '',
      stderr: 'fakegpu: --kubeconfig: cannot read kubeconfig "/nope" (ENOENT)\n',
    });
    for (const cmd of ['plugin', 'fleet']) {
      assert.match(fakegpu(cmd, '--help').stdout, /--no-nics/);
      assert.match(fakegpu(cmd, '--help').stdout, /--http-endpoint <host:port>\s+\/healthz, \/readyz /);
    }
  });
});

describe('plugin and fleet: every input checked before anything starts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-cli-'));
  const profile = (name: string, gpus: string): string => {
    const p = join(dir, `${name}.yaml`);
    writeFileSync(
      p,
      `apiVersion: fakegpu.dev/v1alpha1\nkind: MachineProfile\nmetadata: {name: ${name}}\nspec:\n  gpus: [${gpus}]\n`,
    );
    return p;
  };
  const misfit = profile('misfit', '{model: A100-SXM4-40GB, mig: {layout: "7g.40gb, 1g.5gb"}}');
  const staticMig = profile('static', '{model: A100-SXM4-40GB, mig: {layout: "1g.5gb x7"}}');
  const kc = ['--kubeconfig', '/nope'];
  const plugin = ['plugin', '--node-name', 'n1', '--kubelet-plugins-dir', join(dir, 'plugins')];
  const misfitLine =
    'spec.gpus[0].mig.layout: A100-SXM4-40GB: no free placement for 1g.5gb (instance 1 of 1); already placed: 7g.40gb@0; valid starts: 0, 1, 2, 3, 4, 5, 6';
  const staticLine =
    'spec.gpus[0].mig.layout: a static MIG layout cannot be combined with dynamic MIG: the driver destroys MIG devices no claim holds at start';
  const cases: [string, string[], string][] = [
    [
      'plugin --driver-name',
      [...plugin, '-p', 'dgx-h100', '--driver-name', 'GPU'],
      '--driver-name: "GPU" is not a valid DRA driver name; expected a lower-case DNS subdomain of at most 63 characters with a domain, e.g. "gpu.nvidia.com"',
    ],
    [
      'plugin --driver-namespace',
      [...plugin, '-p', 'oci-bm.gpu.gb200.4', '--driver-namespace', 'NVIDIA_DRA'],
      '--driver-namespace: "NVIDIA_DRA" is not a valid namespace; expected an RFC 1123 label (lower-case a-z, 0-9 and \'-\', at most 63 characters)',
    ],
    [
      'fleet --driver-namespace',
      ['fleet', ...kc, '--driver-namespace', 'a.b'],
      '--driver-namespace: "a.b" is not a valid namespace; expected an RFC 1123 label (lower-case a-z, 0-9 and \'-\', at most 63 characters)',
    ],
    [
      'compute-domain-controller --image-pull-policy',
      ['compute-domain-controller', ...kc, '--image-pull-policy', 'Sometimes'],
      '--image-pull-policy: "Sometimes" is not a pull policy; expected one of IfNotPresent, Never, Always',
    ],
    [
      'compute-domain-controller --daemon-image',
      ['compute-domain-controller', ...kc, '--daemon-image', ' '],
      '--daemon-image: must name an image',
    ],
    [
      'compute-domain-controller --driver-namespace',
      ['compute-domain-controller', ...kc, '--driver-namespace', ''],
      '--driver-namespace: "" is not a valid namespace; expected an RFC 1123 label (lower-case a-z, 0-9 and \'-\', at most 63 characters)',
    ],
    [
      'fleet --driver-name',
      ['fleet', ...kc, '--driver-name', 'GPU'],
      '--driver-name: "GPU" is not a valid DRA driver name; expected a lower-case DNS subdomain of at most 63 characters with a domain, e.g. "gpu.nvidia.com"',
    ],
    [
      'plugin --http-endpoint port',
      [...plugin, '-p', 'dgx-h100', '--http-endpoint', ':1e3'],
      '--http-endpoint: ":1e3" is not host:port, e.g. "127.0.0.1:51516" or ":51516": the port must be a number from 0 to 65535',
    ],
    [
      'plugin --dcgm-endpoint port',
      [...plugin, '-p', 'dgx-h100', '--dcgm-endpoint', ':94000'],
      '--dcgm-endpoint: ":94000" is not host:port, e.g. "127.0.0.1:51516" or ":51516": the port must be a number from 0 to 65535',
    ],
    [
      'plugin --dcgm-exporter-version past 4.8',
      [...plugin, '-p', 'dgx-h100', '--dcgm-exporter-version', '4.9.0'],
      '--dcgm-exporter-version: "4.9.0" is not emulated: 4.9.0 renamed the default fields and changed their units; use 4.8.4 or older',
    ],
    [
      'fleet --dcgm-exporter-version',
      ['fleet', ...kc, '--dcgm-exporter-version', 'latest'],
      '--dcgm-exporter-version: "latest" is not a dcgm-exporter version; expected e.g. 4.8.4 or 4.6.0-4.8.3',
    ],
    [
      'fleet --request-timeout past what a timer holds',
      ['fleet', '--request-timeout', '2147484'],
      '--request-timeout: "2147484" is not an integer from 1 to 2147483',
    ],
    [
      'fleet --profile from standard input',
      ['fleet', '-p', '-'],
      '--profile: "-" (standard input) cannot serve the fleet, which reads its profile again for every node it starts; give a preset or a file',
    ],
    [
      'fleet --http-endpoint host',
      ['fleet', '--http-endpoint', 'bad host:80'],
      '--http-endpoint: "bad host:80" is not host:port, e.g. "127.0.0.1:51516" or ":51516": the host must be empty, an IP address (IPv6 without brackets) or a host name',
    ],
    [
      'plugin --driver-version',
      [...plugin, '-p', 'dgx-h100', '--driver-version', '99999999999999999999999.1.1'],
      '--driver-version: "99999999999999999999999.1.1" has a number above 9007199254740991; each part of a version must be at most that, e.g. "580.126.20"',
    ],
    // Given a kubeconfig that does not exist: the profile is checked before the kubeconfig is even read.
    ['plugin, a MIG layout that does not fit', [...plugin, '-p', misfit, ...kc], misfitLine],
    ['fleet, a MIG layout that does not fit', ['fleet', '-p', misfit], misfitLine],
    [
      'plugin, a static layout under --dynamic-mig',
      [...plugin, '-p', staticMig, '--dynamic-mig', ...kc],
      staticLine,
    ],
    ['fleet, a static layout under --dynamic-mig', ['fleet', '-p', staticMig, '--dynamic-mig'], staticLine],
    [
      'plugin --node-name too long for the slices',
      ['plugin', '--node-name', 'a'.repeat(240), '-p', 'dgx-h100'],
      `--node-name: "${'a'.repeat(80)}"… (240 characters) is too long: the slices of driver gpu.nvidia.com would have a generateName of 262 characters and the API server allows 253; the node name can have at most 231 characters`,
    ],
    [
      'plugin --kubeconfig missing',
      [...plugin, '-p', 'dgx-h100', ...kc],
      '--kubeconfig: cannot read kubeconfig "/nope" (ENOENT)',
    ],
    ['fleet --kubeconfig missing', ['fleet', ...kc], '--kubeconfig: cannot read kubeconfig "/nope" (ENOENT)'],
  ];
  for (const [what, args, line] of cases) {
    it(what, () => {
      assert.deepEqual(fakegpu(...args), { code: 1, stdout: '', stderr: `fakegpu: ${line}\n` });
    });
  }

  it('fleet and compute-domain-controller: an --http-endpoint in use is one line, and the process exits', async () => {
    const config = unusedKubeconfig(dir);
    const taken = await takenEndpoint();
    const endpoint = taken.endpoint;
    try {
      for (const cmd of ['fleet', 'compute-domain-controller'])
        assert.deepEqual(fakegpu(cmd, '--kubeconfig', config, '--http-endpoint', endpoint), {
          code: 1,
          stdout: '',
          stderr: `fakegpu: --http-endpoint: cannot listen on "${endpoint}": the address is already in use (another process listens there)\n`,
        });
    } finally {
      await taken.close();
    }
  });

  it('KUBECONFIG naming a missing file is named as KUBECONFIG', () => {
    const r = fakegpuIn({ env: { ...process.env, KUBECONFIG: '/nope' } }, ...plugin, '-p', 'dgx-h100');
    assert.deepEqual(r, {
      code: 1,
      stdout: '',
      stderr: 'fakegpu: KUBECONFIG: cannot read kubeconfig "/nope" (ENOENT)\n',
    });
  });

  it('no kubeconfig anywhere, outside a cluster', (t) => {
    if (existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) {
      t.skip('this machine has in-cluster credentials');
      return;
    }
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir };
    delete env['KUBECONFIG'];
    assert.deepEqual(fakegpuIn({ env }, ...plugin, '-p', 'dgx-h100'), {
      code: 1,
      stdout: '',
      stderr:
        'fakegpu: --kubeconfig: no kubeconfig: not given, KUBECONFIG is unset, there is no ~/.kube/config and no in-cluster service account; give --kubeconfig <file>\n',
    });
  });
});
