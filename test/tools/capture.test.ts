import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { CAPTURE_SCRIPT, parseBundle, SECTIONS, type Section } from '../../src/tools/capture/bundle.js';
import { captureCluster, type ClusterNode, type Taint } from '../../src/tools/capture/cluster.js';
import { compareNode } from '../../src/tools/capture/compare.js';
import { writeCapture } from '../../src/tools/capture/write.js';
import { parsePools } from '../../src/fleet/pools.js';
import { diffSlices, renderDiff } from '../../src/tools/capture/diff.js';
import { readNodeInputs } from '../../src/tools/capture/inputs.js';
import { captureNode } from '../../src/tools/capture/node.js';
import { anonymizeNics } from '../../src/tools/capture/anonymize.js';
import { parseLgip, parseLgipp } from '../../src/tools/capture/mig-tables.js';
import { parseLspci, parseSysfsLinks } from '../../src/tools/capture/pci.js';
import { machineFromSlices } from '../../src/tools/capture/slices.js';
import { readSlices } from '../../src/model/slice/read.js';
import { parseSmiXml } from '../../src/tools/capture/smi-xml.js';
import { parseTopo } from '../../src/tools/capture/topo.js';
import { FakegpuError } from '../../src/errors.js';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { PRESETS } from '../../src/model/preset/index.js';
import { REAL_CAPTURES } from '../../src/model/preset/captures.js';
import { mergeOverPreset, parseProfileText, profileFromText } from '../../src/model/profile/load.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { type RenderOptions, renderSlices } from '../../src/model/render.js';
import { buildMachine } from '../../src/model/hardware/build.js';
import { modelLookup } from '../../src/model/hardware/models.js';
import { nvmlBusId } from '../../src/model/hardware/pci.js';
import { gpuInstanceId } from '../../src/model/nvml/mock.js';
import { REPO_ROOT } from '../../src/process/repo.js';

const fixtures = join(REPO_ROOT, 'test', 'fixtures');
const smiDir = join(fixtures, 'nvidia-smi');
const read = (f: string): string => readFileSync(join(smiDir, f), 'utf8');
const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');
const K8S = { major: 1, minor: 37, patch: 0 };

/** Render options of one node as the tests use them: gpu.nvidia.com, Kubernetes 1.37, NVIDIA's 0.5. */
function renderOpts(nodeName: string, more: Partial<RenderOptions> = {}): RenderOptions {
  return {
    nodeName,
    dynamicMig: false,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: K8S,
    release: '0.5',
    ...more,
  };
}

function fakegpu(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function refused(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof FakegpuError && message.test(e.message));
}

/**
 * The real slice captures of test/fixtures/captures, as `kubectl get resourceslices -o json` prints
 * them, and the profile beside each (`<capture>.profile.yaml`) they match.
 */
function realCaptures(): {
  file: string;
  profileFile: string;
  slices: ResourceSlice[];
  exact: boolean;
  profile: string;
}[] {
  const dir = join(fixtures, 'captures');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => {
      const profileFile = join(dir, f.replace(/\.json$/, '.profile.yaml'));
      return {
        file: join(dir, f),
        profileFile,
        slices: readSlices(readFileSync(join(dir, f), 'utf8'), f, '--capture'),
        // GB200's dra.net slice was trimmed by hand (the folder's README says what).
        exact: f !== 'oci-bm.gpu.gb200.4.json',
        profile: readFileSync(profileFile, 'utf8'),
      };
    });
}

describe('nvidia-smi -q -x', () => {
  it('reads a real A100 80GB in MIG mode (fixture from telegraf, driver 535)', () => {
    const log = parseSmiXml(read('telegraf-a100-sxm4-80gb-mig.xml'), 'a100.xml');
    assert.equal(log.dtdVersion, 12);
    assert.equal(log.driverVersion, '535.54.03');
    assert.equal(log.cudaVersion, '12.2');
    const [gpu] = log.gpus;
    assert.ok(gpu);
    assert.equal(gpu.productName, 'NVIDIA A100-SXM4-80GB');
    assert.equal(gpu.busId, '00000000:01:00.0');
    assert.equal(gpu.uuid, 'GPU-513536b6-7d19-9063-b049-1e69664bb298');
    assert.equal(gpu.pciDeviceId, 0x20b2);
    assert.equal(gpu.pciSubsystemId, 0x147f);
    assert.equal(gpu.memoryMiB, 81920);
    assert.equal(gpu.migMode, 'Enabled');
    assert.deepEqual(
      gpu.migDevices.map((d) => [d.gpuInstanceId, d.computeInstanceId, d.multiprocessors, d.memoryMiB]),
      [
        [3, 0, 14, 19968],
        [4, 0, 14, 19968],
        [5, 0, 14, 19968],
        [6, 0, 14, 19968],
      ],
    );
  });

  it('refuses a truncated file in one line naming where it stops', () => {
    const xml = read('telegraf-a100-sxm4-80gb-mig.xml');
    refused(
      () => parseSmiXml(xml.slice(0, 4000), 'cut.xml'),
      /^cut\.xml: the XML ends inside <shared> \(still open: nvidia_smi_log > gpu > mig_devices > mig_device > device_attributes > shared\): the file is cut off; give the whole output of nvidia-smi -q -x$/,
    );
    refused(() => parseSmiXml('<html></html>', 'page.xml'), /^page\.xml: no <nvidia_smi_log> element/);
  });
});

describe('capture node', () => {
  it('turns the XML into a profile whose render shows the same GPU, MIG instances where their IDs put them', () => {
    const { node, warnings } = readNodeInputs({
      'nvidia-smi-xml': { text: read('telegraf-a100-sxm4-80gb-mig.xml'), source: 'a100.xml' },
    });
    assert.deepEqual(warnings, []);
    const { profile, warnings: more } = captureNode(node, { anonymize: false });
    assert.deepEqual(more, []);
    assert.deepEqual(profile.spec.gpus, [
      {
        model: 'A100-SXM4-80GB',
        busId: '0000:01:00.0',
        minor: 1,
        uuid: 'GPU-513536b6-7d19-9063-b049-1e69664bb298',
        mig: { mode: 'enabled', layout: ['1g.20gb@0', '1g.20gb@2', '1g.20gb@4', '1g.20gb@6'] },
      },
    ]);
    assert.deepEqual(profile.spec.driver, { version: '535.54.03', cudaVersion: '12.2' });
    assert.equal(profile.provenance.uuids?.status, 'confirmed');
    assert.equal(profile.provenance.pcieRoots?.status, 'derived');
    // What the profile says is what a node renders, through the same schema a user's file goes through.
    const parsed = parseProfileText(JSON.stringify(profile), 'captured');
    const list = renderSlices(
      { name: parsed.metadata.name, preset: null, spec: mergeOverPreset(parsed.spec) },
      renderOpts('n1'),
    );
    const devices = list.items.flatMap((s) => s.spec.devices ?? []);
    assert.deepEqual(
      devices.map((d) => d.name),
      ['gpu-1-mig-1g20gb-15-0', 'gpu-1-mig-1g20gb-15-2', 'gpu-1-mig-1g20gb-15-4', 'gpu-1-mig-1g20gb-15-6'],
    );
    for (const d of devices) {
      assert.deepEqual(d.attributes?.parentUUID, { string: 'GPU-513536b6-7d19-9063-b049-1e69664bb298' });
      assert.deepEqual(d.attributes.driverVersion, { version: '535.54.3' });
    }
  });

  it('--anonymize leaves the UUIDs to each node and says so; serials never reach the profile', () => {
    const { node } = readNodeInputs({
      'nvidia-smi-xml': { text: read('telegraf-a100-sxm4-80gb-mig.xml'), source: 'a100.xml' },
    });
    const { profile } = captureNode(node, { anonymize: true });
    assert.equal(profile.spec.gpus?.[0]?.uuid, undefined);
    assert.equal(profile.provenance.uuids?.status, 'derived');
    assert.doesNotMatch(JSON.stringify(profile), /1650522003820/, 'the board serial');
  });

  it('captures a GPU outside the catalog as a custom model with a warning, and warns of a driver branch it does not know', () => {
    const xml = read('telegraf-a100-sxm4-80gb-mig.xml');
    const unknown = xml.replace('NVIDIA A100-SXM4-80GB', 'NVIDIA Z900 Prototype');
    const z = captureNode(readNodeInputs({ 'nvidia-smi-xml': { text: unknown, source: 'z.xml' } }).node, {
      anonymize: false,
    });
    assert.deepEqual(z.warnings, [
      'z.xml: gpu[0]: product "NVIDIA Z900 Prototype" is not in fakegpu\'s GPU catalog; captured as custom model "Z900-Prototype" from the XML (compute capability 8.0 inferred from Ampere, SM count a default, no MIG)',
      'z.xml: gpu[0] (0000:01:00.0): its 4 MIG device(s) are left out: a custom model has no MIG table',
    ]);
    assert.deepEqual(z.profile.spec.models, [
      {
        key: 'Z900-Prototype',
        name: 'NVIDIA Z900 Prototype',
        architecture: 'Ampere',
        computeCapability: '8.0',
        memoryMiB: 81920,
        pciDeviceId: '20b2',
        pciSubsystemId: '147f',
        powerLimitW: 500,
      },
    ]);
    assert.deepEqual(z.profile.provenance.gpus, {
      status: 'inferred',
      from: 'z.xml, but custom model "Z900-Prototype": compute capability from the architecture, SM count a default, no MIG',
    });
    const parsed = parseProfileText(JSON.stringify(z.profile), 'z');
    const devices = renderSlices(
      { name: 'z', preset: null, spec: mergeOverPreset(parsed.spec) },
      renderOpts('n1'),
    ).items.flatMap((x) => x.spec.devices ?? []);
    assert.deepEqual(devices[0]?.attributes?.productName, { string: 'NVIDIA Z900 Prototype' });
    assert.deepEqual(devices[0].capacity?.memory, { value: '80Gi' });
    const alien = unknown.replace('<product_architecture>Ampere', '<product_architecture>Rubin');
    refused(
      () =>
        captureNode(readNodeInputs({ 'nvidia-smi-xml': { text: alien, source: 'r.xml' } }).node, {
          anonymize: false,
        }),
      /^r\.xml: gpu\[0\]\/product_architecture: product "NVIDIA Z900 Prototype" is not in fakegpu's GPU catalog and its architecture "Rubin" is not one fakegpu models \(Turing, Ampere, Ada Lovelace, Hopper, Blackwell\)$/,
    );
    const [custom] = z.profile.spec.models ?? [];
    assert.ok(custom);
    refused(
      () => modelLookup({ models: [{ ...custom, key: 'H100-SXM5-80GB' }] }),
      /^spec\.models\[0\]\.key: "H100-SXM5-80GB" is the catalog's H100-SXM5-80GB; name the catalog model in gpus\[\]\.model instead$/,
    );
    const future = xml.replace('<driver_version>535.54.03', '<driver_version>612.10.01');
    const { warnings } = captureNode(
      readNodeInputs({ 'nvidia-smi-xml': { text: future, source: 'f.xml' } }).node,
      { anonymize: false },
    );
    assert.deepEqual(warnings, [
      'f.xml: driver 612.10.01 is of branch R612, which fakegpu does not know (R450 to R595); its facts are taken as read, check the profile',
    ]);
  });

  it("checks nvidia-smi mig -lgip and -lgipp against the catalog's MIG profiles, naming what differs", () => {
    const xml = { text: read('k8s-test-infra-h100.xml'), source: 'h100.xml' };
    const lgip = { text: read('mig-lgip-h100.txt'), source: 'lgip' };
    const lgipp = { text: read('mig-lgipp-h100.txt'), source: 'lgipp' };
    assert.equal(parseLgip(lgip.text, 'lgip').length, 7);
    assert.deepEqual(parseLgipp(lgipp.text, 'lgipp')[5], { gpu: 0, id: 5, starts: [0], size: 4 });
    const same = readNodeInputs({ 'nvidia-smi-xml': xml, 'mig-lgip': lgip, 'mig-lgipp': lgipp });
    const ok = captureNode(same.node, { anonymize: true });
    assert.deepEqual(ok.warnings, []);
    assert.equal(ok.profile.provenance.mig?.from, "lgip and lgipp (the catalog's MIG profiles)");
    const changed = {
      text: lgip.text.replace(/(MIG 3g\.40gb\s+9\s+2\/2\s+39\.\d+\s+No\s+)60/, '$162'),
      source: 'lgip',
    };
    assert.notEqual(changed.text, lgip.text);
    const bad = readNodeInputs({ 'nvidia-smi-xml': xml, 'mig-lgip': changed, 'mig-lgipp': lgipp });
    assert.deepEqual(captureNode(bad.node, { anonymize: true }).warnings, [
      "lgip and lgipp: GPU 0: MIG profile 3g.40gb: SMs is 62 on this node but 60 in fakegpu's catalog",
    ]);
    refused(
      () => parseLgip('nothing\n', 'x'),
      /^x: no profile row; expected the table nvidia-smi mig -lgip prints$/,
    );
  });

  it('reads GPU NUMA nodes from nvidia-smi topo -m, tab- or space-separated, and says why a Grace list is not one', () => {
    const h100 = parseTopo(read('topo-dgx-h100.txt'), 'topo');
    assert.deepEqual(
      [...h100.gpuNuma],
      [0, 0, 0, 0, 1, 1, 1, 1].map((n, i) => [i, n]),
    );
    assert.equal(h100.nics.get('NIC11'), 'mlx5_11');
    assert.equal(h100.links.get(0)?.get('NIC0'), 'PXB');
    const gb200 = parseTopo(read('topo-gb200.txt'), 'topo');
    assert.equal(gb200.gpuNuma.size, 0);
    assert.match(gb200.notes[0] ?? '', /GPU0's NUMA Affinity is "0,3-9,11-17", not one node/);
    const ansi = parseTopo(
      '\t\u001b[4mGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\u001b[0m\nGPU0\t X \t0-23\t0\t\tN/A\n',
      't',
    );
    assert.deepEqual([...ansi.gpuNuma], [[0, 0]]);
    refused(() => parseTopo('GPU0 GPU1\n', 'bad'), /^bad: no matrix header/);
  });

  it('places GPUs and NICs on PCIe roots and NUMA nodes from lspci and the sysfs links', () => {
    const lspci = parseLspci(
      [
        'Slot:\t0000:1b:00.0\nClass:\t3D controller [0302]\nVendor:\tNVIDIA Corporation [10de]\nDevice:\tGH100 [H100 SXM5 80GB] [2330]\nNUMANode:\t0\n',
        'Slot:\t0000:18:00.0\nClass:\tInfiniband controller [0207]\nVendor:\tMellanox Technologies [15b3]\nDevice:\tMT2910 Family [ConnectX-7] [1021]\nNUMANode:\t0\n',
        'Slot:\t0000:a1:00.0\nClass:\tEthernet controller [0200]\nVendor:\tIntel Corporation [8086]\nDevice:\tEthernet Controller E810 [1593]\nNUMANode:\t1\n',
      ].join('\n'),
      'lspci',
    );
    assert.equal(lspci.length, 3);
    assert.equal(lspci[1]?.deviceId, '1021');
    const sysfs = parseSysfsLinks(
      [
        'lrwxrwxrwx 1 root root 0 Dec  1 10:00 0000:1b:00.0 -> ../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0/0000:1b:00.0',
        '0000:18:00.0 /sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0 0',
      ].join('\n'),
      'sysfs',
    );
    assert.deepEqual(
      sysfs.map((s) => [s.busId, s.pcieRoot, s.numaNode]),
      [
        ['0000:1b:00.0', 'pci0000:15', undefined],
        ['0000:18:00.0', 'pci0000:15', 0],
      ],
    );
    const xml = read('telegraf-a100-sxm4-80gb-mig.xml').replace(/00000000:01:00\.0/g, '00000000:1B:00.0');
    const { node, warnings } = readNodeInputs({
      'nvidia-smi-xml': { text: xml, source: 'x.xml' },
      lspci: { text: readLspciText(), source: 'lspci.txt' },
      pci: {
        text: '0000:1b:00.0 /sys/devices/pci0000:15/0000:15:01.0/0000:1b:00.0 0\n0000:18:00.0 /sys/devices/pci0000:15/0000:15:01.0/0000:18:00.0 0\n',
        source: 'pci.txt',
      },
      rdma: { text: 'mlx5_0 /sys/devices/pci0000:15/0000:15:01.0/0000:18:00.0\n', source: 'rdma' },
      net: { text: 'ibp24s0 /sys/devices/pci0000:15/0000:15:01.0/0000:18:00.0\n', source: 'net' },
      'ip-link': {
        text: '[{"ifname":"ibp24s0","mtu":4092,"address":"0e:96:fe:e8:a3:f5"}]',
        source: 'ip-link',
      },
    });
    assert.deepEqual(warnings, [
      "lspci.txt: 0000:a1:00.0 Intel Corporation Ethernet Controller E810: not in fakegpu's NIC catalog, left out",
    ]);
    const { profile } = captureNode(node, { anonymize: false });
    assert.equal(profile.spec.gpus?.[0]?.pcieRoot, 'pci0000:15');
    assert.equal(profile.spec.gpus[0].numaNode, 0);
    const nic = {
      busId: '0000:18:00.0',
      model: 'ConnectX-7',
      ifName: 'ibp24s0',
      pcieRoot: 'pci0000:15',
      numaNode: 0,
      rdmaDevice: 'mlx5_0',
      mac: '0e:96:fe:e8:a3:f5',
      mtu: 4092,
    };
    assert.deepEqual(profile.spec.nics, [nic]);
    assert.equal(profile.provenance.pcieRoots?.status, 'confirmed');
    assert.equal(profile.provenance.pcieRoots.from, 'pci.txt');
    assert.match(
      profile.provenance.nics?.from ?? '',
      /^lspci -D -vmm, \/sys\/class\/\{net,infiniband\}, ip -j link$/,
    );
    // --anonymize keeps the place and leaves the MAC to each node, as it does the UUIDs.
    const { mac: _mac, ...anonymous } = nic;
    assert.deepEqual(captureNode(node, { anonymize: true }).profile.spec.nics, [anonymous]);
  });

  it('reads the bundle the capture script writes, and the script is plain sh that runs here', () => {
    const dir = mkdtempSync(join(tmpdir(), 'capture-'));
    writeFileSync(join(dir, 'capture.sh'), CAPTURE_SCRIPT);
    const syntax = spawnSync('sh', ['-n', join(dir, 'capture.sh')], { encoding: 'utf8' });
    assert.equal(syntax.status, 0, syntax.stderr);
    // This machine has no nvidia-smi: the script leaves those sections out and still collects the rest.
    const run = spawnSync('sh', [join(dir, 'capture.sh')], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 0, run.stderr);
    const bundle = parseBundle(run.stdout, 'capture.txt');
    assert.equal(bundle.sections['nvidia-smi-xml'], undefined);
    assert.match(bundle.sections.pci ?? '', /^0000:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] \/sys\/devices\/pci/m);
    assert.doesNotMatch(
      run.stdout,
      new RegExp(`\\b${spawnSync('hostname', { encoding: 'utf8' }).stdout.trim()}\\b`),
    );
    const withXml = `fakegpu-capture v1\n=== fakegpu-capture nvidia-smi-xml ===\n${read('telegraf-a100-sxm4-80gb-mig.xml')}=== fakegpu-capture-exit nvidia-smi-xml 0 ===\n=== fakegpu-capture topo ===\n=== fakegpu-capture-exit topo 9 ===\n`;
    const b = parseBundle(withXml, 'b.txt');
    assert.match(b.sections['nvidia-smi-xml'] ?? '', /<nvidia_smi_log>/);
    assert.deepEqual(b.failed, ['topo (exit 9)']);
    refused(
      () => parseBundle(withXml.slice(0, 300), 'cut.txt'),
      /^cut\.txt: section "nvidia-smi-xml" is cut off: the file is truncated$/,
    );
    refused(() => parseBundle('hello\n', 'x.txt'), /^x\.txt: does not start with "fakegpu-capture v1"/);
  });
});

function readLspciText(): string {
  return [
    'Slot:\t0000:1b:00.0\nClass:\t3D controller [0302]\nVendor:\tNVIDIA Corporation [10de]\nDevice:\tGA100 [A100 SXM4 80GB] [20b2]\nNUMANode:\t0\n',
    'Slot:\t0000:18:00.0\nClass:\tInfiniband controller [0207]\nVendor:\tMellanox Technologies [15b3]\nDevice:\tMT2910 Family [ConnectX-7] [1021]\nNUMANode:\t0\n',
    'Slot:\t0000:a1:00.0\nClass:\tEthernet controller [0200]\nVendor:\tIntel Corporation [8086]\nDevice:\tEthernet Controller E810 [1593]\nNUMANode:\t1\n',
  ].join('\n');
}

/** The T4 fixture's one GPU repeated `n` times, each with its own bus ID, minor and UUID. */
function manyT4s(n: number): string {
  const xml = read('k8s-test-infra-t4.xml');
  const start = xml.indexOf('<gpu id=');
  const end = xml.lastIndexOf('</gpu>') + '</gpu>'.length;
  const gpu = xml.slice(start, end);
  const copies = Array.from({ length: n }, (_, i) => {
    const bus = `0000${(i >> 5).toString(16).padStart(4, '0')}:${(i & 31).toString(16).padStart(2, '0')}:00.0`;
    return gpu
      .replaceAll('00000000:00:1E.0', bus)
      .replace('<minor_number>0<', `<minor_number>${i % 255}<`)
      .replace(
        'GPU-00000000-0000-0000-0000-000000000000',
        `GPU-${i.toString(16).padStart(8, '0')}-0000-0000-0000-000000000000`,
      );
  });
  return xml.slice(0, start) + copies.join('\n') + xml.slice(end);
}

/** A ConnectX-7 beside the A100 of the telegraf fixture, named and described by the network inputs. */
function nicNode(net: { ibdev2netdev?: string; ipLink?: string; ipAddr?: string; lspci?: string }) {
  const xml = read('telegraf-a100-sxm4-80gb-mig.xml').replace(/00000000:01:00\.0/g, '00000000:1B:00.0');
  return readNodeInputs({
    'nvidia-smi-xml': { text: xml, source: 'x.xml' },
    lspci: { text: net.lspci ?? readLspciText(), source: 'lspci.txt' },
    ...(net.ibdev2netdev ? { ibdev2netdev: { text: net.ibdev2netdev, source: 'ib' } } : {}),
    ...(net.ipLink ? { 'ip-link': { text: net.ipLink, source: 'link' } } : {}),
    ...(net.ipAddr ? { 'ip-addr': { text: net.ipAddr, source: 'addr' } } : {}),
  });
}

describe('capture node writes only what validate accepts', () => {
  const exact = (run: () => unknown, message: string): void => {
    assert.throws(run, (e: unknown) => {
      assert.ok(e instanceof FakegpuError, `not a FakegpuError: ${String(e)}`);
      assert.equal(e.message, message);
      return true;
    });
  };
  const capture = (xml: string, name?: string) =>
    captureNode(readNodeInputs({ 'nvidia-smi-xml': { text: xml, source: 'x.xml' } }).node, {
      anonymize: false,
      name,
    });
  const h100 = read('k8s-test-infra-h100.xml');
  const tail = '; the profile captured from x.xml would not validate, so nothing was written';

  it('refuses GPUs that share a bus ID, a minor or a UUID, naming the GPU', () => {
    exact(
      () => capture(h100.replace(/00000000:64:00\.0/g, '00000000:53:00.0')),
      `spec.gpus[1].busId (the GPU at 0000:53:00.0): duplicate bus ID "0000:53:00.0"; spec.gpus[0].busId has it already${tail}`,
    );
    exact(
      () => capture(h100.replace('<minor_number>1<', '<minor_number>0<')),
      `spec.gpus[1].minor (the GPU at 0000:64:00.0): duplicate minor number "0"; spec.gpus[0].minor has it already${tail}`,
    );
    exact(
      () =>
        capture(
          h100.replace(
            'GPU-00000001-0000-0000-0000-000000000001',
            'GPU-00000000-0000-0000-0000-000000000000',
          ),
        ),
      `spec.gpus[1].uuid (the GPU at 0000:64:00.0): duplicate UUID "GPU-00000000-0000-0000-0000-000000000000"; spec.gpus[0].uuid has it already${tail}`,
    );
  });

  it('refuses 256 GPUs, as the README says a node has at most 255', () => {
    assert.equal(capture(manyT4s(255)).profile.spec.gpus?.length, 255);
    refused(
      () => capture(manyT4s(256)),
      /^spec\.gpus: 256 items; at most 255 are allowed, as a node has at most 255 GPUs \(got \[\{"model":"T4",.*\); the profile captured from x\.xml would not validate, so nothing was written$/,
    );
  });

  it('refuses a driver version that is not one, beyond the warning of an unknown branch', () => {
    exact(
      () => capture(h100.replace('<driver_version>580.105.08', '<driver_version>banana')),
      `spec.driver.version: "banana" is not a version; expected numbers separated by dots, e.g. "580.126.20"${tail}`,
    );
  });

  it('refuses an empty or a 300-character --name', () => {
    const t4 = read('k8s-test-infra-t4.xml');
    exact(() => capture(t4, ''), `--name: Too small: expected string to have >=1 characters (got "")${tail}`);
    exact(
      () => capture(t4, 'n'.repeat(300)),
      `--name: Too big: expected string to have <=253 characters (got "${'n'.repeat(80)}"… (300 characters))${tail}`,
    );
  });

  it('refuses a product name longer than a slice attribute holds, though it is a custom model', () => {
    const xml = read('telegraf-a100-sxm4-80gb-mig.xml').replace(
      'NVIDIA A100-SXM4-80GB',
      `NVIDIA ${'Z'.repeat(1_000_000)}`,
    );
    assert.throws(
      () => capture(xml),
      (e: unknown) =>
        e instanceof FakegpuError &&
        e.message.startsWith(
          'spec.models[0].name: must be at most 64 bytes: it is published as the productName attribute, and the API server refuses longer string attributes (got "NVIDIA ZZZ',
        ) &&
        e.message.endsWith(`… (1000007 characters))${tail}`),
    );
  });

  it('refuses NUMA -5, MTU -5, a bad IPv4 address and an interface name with "/", naming the NIC', () => {
    const named = {
      ibdev2netdev: '0000:18:00.0 mlx5_0 (MT4129 - NV) fw 28.39 port 1 (ACTIVE) ==> ibp24s0 (Up)\n',
    };
    exact(
      () =>
        captureNode(
          nicNode({ ...named, lspci: readLspciText().replace('NUMANode:\t0\n', 'NUMANode:\t-5\n') }).node,
          {
            anonymize: false,
          },
        ),
      `spec.gpus[0].numaNode (the GPU at 0000:1b:00.0): Too small: expected number to be >=-1 (got -5)${tail}`,
    );
    exact(
      () =>
        captureNode(nicNode({ ...named, ipLink: '[{"ifname":"ibp24s0","mtu":-5}]' }).node, {
          anonymize: false,
        }),
      `spec.nics[0].mtu (the NIC at 0000:18:00.0): Too small: expected number to be >=68 (got -5)${tail}`,
    );
    exact(
      () =>
        captureNode(
          nicNode({
            ...named,
            ipAddr:
              '[{"ifname":"ibp24s0","addr_info":[{"family":"inet","local":"10.0.0.300","prefixlen":24}]}]',
          }).node,
          { anonymize: false },
        ),
      `spec.nics[0].ipv4 (the NIC at 0000:18:00.0): must be an IPv4 address with prefix: four numbers from 0 to 255 and a prefix length from 0 to 32, e.g. "10.0.0.5/24" (got "10.0.0.300/24")${tail}`,
    );
    exact(
      () =>
        captureNode(
          nicNode({ ibdev2netdev: named.ibdev2netdev.replace('ibp24s0', '../../etc/passwd') }).node,
          {
            anonymize: false,
          },
        ),
      `spec.nics[0].ifName (the NIC at 0000:18:00.0): must be a Linux interface name: 1 to 15 bytes, not "." or "..", without "/", ":" or whitespace (got "../../etc/passwd")${tail}`,
    );
  });

  it('leaves out, with a warning, a ConnectX that no input names the interface of', () => {
    const { node, warnings } = nicNode({});
    assert.deepEqual(warnings, [
      "lspci.txt: 0000:a1:00.0 Intel Corporation Ethernet Controller E810: not in fakegpu's NIC catalog, left out",
      'lspci.txt: 0000:18:00.0 ConnectX-7: no input names its network interface (give --ibdev2netdev, or --bundle with the net section), left out',
    ]);
    const { profile } = captureNode(node, { anonymize: false });
    assert.deepEqual(profile.spec.nics, []);
    // What capture wrote, validate takes: the same schema and render a file goes through.
    renderSlices(profileFromText(JSON.stringify(profile), 'p'), renderOpts('n1'));
  });
});

/** Real `nvidia-smi -q -x` outputs and the preset each is a node of: the list `fakegpu profiles` shows. */
const REAL_XML = REAL_CAPTURES.filter((c) => c.kind === 'nvidia-smi');

describe('real nvidia-smi captures', () => {
  it('are the fixtures, every one, as fakegpu profiles lists them', () => {
    const listed = (kind: string): string[] =>
      REAL_CAPTURES.filter((c) => c.kind === kind)
        .map((c) => c.file)
        .sort();
    assert.deepEqual(
      listed('nvidia-smi'),
      readdirSync(smiDir)
        .filter((f) => f.endsWith('.xml'))
        .sort(),
    );
    assert.deepEqual(
      listed('slices'),
      readdirSync(join(fixtures, 'captures'))
        .filter((f) => f.endsWith('.json'))
        .sort(),
    );
    const r = fakegpu('profiles');
    assert.match(r.stdout, /^aws-g6e\.2xlarge .* nvidia-smi$/m);
    assert.match(r.stdout, /^azure-nd-gb300-v6 .* slices\+nvidia-smi$/m);
    assert.match(r.stdout, /^dgx-h200 .* none$/m);
  });

  it('round trip: the machine a captured profile builds is the one nvidia-smi showed, GPU by GPU', () => {
    for (const { file } of REAL_XML) {
      const xml = read(file);
      const log = parseSmiXml(xml, file);
      const { node, warnings } = readNodeInputs({ 'nvidia-smi-xml': { text: xml, source: file } });
      const captured = captureNode(node, { anonymize: false });
      assert.deepEqual(
        [...warnings, ...captured.warnings],
        [],
        `${file}: every fact agrees with the catalog`,
      );
      const profile = parseProfileText(JSON.stringify(captured.profile), file);
      const machine = buildMachine(
        { name: file, preset: null, spec: mergeOverPreset(profile.spec) },
        { nodeName: 'n1', dynamicMig: false },
      );
      assert.equal(machine.driverVersion, log.driverVersion, file);
      const want = [...log.gpus].sort((a, b) => a.busId.localeCompare(b.busId));
      assert.equal(machine.gpus.length, want.length, file);
      machine.gpus.forEach((hw, i) => {
        const g = want[i];
        assert.ok(g);
        const where = `${file} ${g.busId}`;
        assert.equal(hw.model.name, g.productName, where);
        assert.equal(nvmlBusId(hw.busId), g.busId, where);
        assert.equal(hw.uuid, g.uuid, where);
        assert.equal(hw.minor, g.minor, where);
        assert.equal(hw.model.memoryMiB, g.memoryMiB, where);
        assert.equal(hw.model.pciDeviceId, g.pciDeviceId, where);
        assert.equal(hw.migEnabled, g.migMode === 'Enabled', where);
        const slices = hw.model.mig?.memorySlices ?? 8;
        assert.deepEqual(
          hw.migInstances.map((p) => [
            gpuInstanceId(slices, p.start, p.profile.placementSize),
            p.profile.multiprocessors,
          ]),
          g.migDevices.map((d) => [d.gpuInstanceId, d.multiprocessors]),
          where,
        );
      });
      if (log.gpus.some((g) => g.fabric)) assert.ok(machine.fabric, `${file}: NVLink fabric kept`);
    }
  });

  it('confirms the presets they are nodes of: fakegpu diff of the two renders differs only in what the XML cannot know', () => {
    for (const { file, preset } of REAL_XML) {
      if (preset === undefined) continue;
      const { node } = readNodeInputs({ 'nvidia-smi-xml': { text: read(file), source: file } });
      const captured = captureNode(node, { anonymize: true });
      const base = resolveProfile(preset);
      const opts = renderOpts('n1', { driverVersion: base.spec.driver?.version });
      const fromXml = renderSlices({ name: file, preset: null, spec: captured.profile.spec }, opts).items;
      // Without sysfs or topo input, PCIe roots and NUMA nodes are derived, not read: not compared.
      const r = diffSlices(renderSlices(base, opts).items, fromXml, new Set(['pcieRoot', 'numaNode']));
      assert.deepEqual(r.differences, [], `${file} against ${preset}`);
    }
  });
});

/**
 * A bundle as the capture script writes it on a node: one of the real nvidia-smi outputs, with GPU
 * processes running (the fixtures were taken idle), and a network of three ConnectX-7 ports, the last
 * one carrying the default route, with MACs, IPv4 and IPv6 addresses and a gateway.
 */
function nodeBundle(xml: string): { text: string; secrets: string[] } {
  const procs = [
    { pid: '2718281', name: '/opt/team-falcon/bin/train_llm' },
    { pid: '3141592', name: 'python3 /home/alice/finetune_secret.py' },
  ];
  const withProcs = xml.replace(
    /<processes>\s*<\/processes>|<processes \/>/,
    `<processes>\n${procs
      .map(
        (p) =>
          `\t\t\t<process_info>\n\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>\n\t\t\t\t<compute_instance_id>N/A</compute_instance_id>\n\t\t\t\t<pid>${p.pid}</pid>\n\t\t\t\t<type>C</type>\n\t\t\t\t<process_name>${p.name}</process_name>\n\t\t\t\t<used_memory>1024 MiB</used_memory>\n\t\t\t</process_info>`,
      )
      .join('\n')}\n\t\t</processes>`,
  );
  assert.notEqual(withProcs, xml, 'the processes went in');
  const nics = [
    {
      bus: '0000:18:00.0',
      ifName: 'ibp24s0',
      rdma: 'mlx5_0',
      mac: 'b8:3f:d2:11:22:33',
      v4: '10.42.7.19',
      v6: '2600:1f18:4c1:7a00::17',
    },
    {
      bus: '0000:19:00.0',
      ifName: 'ibp25s0',
      rdma: 'mlx5_1',
      mac: 'b8:3f:d2:11:22:34',
      v4: '10.42.7.20',
      v6: '2600:1f18:4c1:7a00::18',
    },
    {
      bus: '0000:1a:00.0',
      ifName: 'ens26np0',
      rdma: 'mlx5_2',
      mac: '94:6d:ae:01:02:03',
      v4: '172.31.5.6',
      v6: 'fe80::966d:aeff:fe01:203',
    },
  ];
  const gateway = '172.31.0.1';
  const section = (name: string, body: string): string =>
    `=== fakegpu-capture ${name} ===\n${body}\n=== fakegpu-capture-exit ${name} 0 ===\n`;
  const path = (bus: string) => `/sys/devices/pci0000:15/0000:15:01.0/${bus}`;
  const text = [
    'fakegpu-capture v1\n',
    section('nvidia-smi-xml', withProcs.trimEnd()),
    section(
      'lspci',
      nics
        .map(
          (n) =>
            `Slot:\t${n.bus}\nClass:\tInfiniband controller [0207]\nVendor:\tMellanox Technologies [15b3]\nDevice:\tMT2910 Family [ConnectX-7] [1021]\nNUMANode:\t0\n`,
        )
        .join('\n'),
    ),
    section('net', nics.map((n) => `${n.ifName} ${path(n.bus)}`).join('\n')),
    section('rdma', nics.map((n) => `${n.rdma} ${path(n.bus)}`).join('\n')),
    section('ibdev2netdev', nics.map((n) => `${n.bus} ${n.rdma} port 1 ==> ${n.ifName} (Up)`).join('\n')),
    section(
      'ip-link',
      JSON.stringify(
        nics.map((n) => ({ ifname: n.ifName, mtu: 4200, address: n.mac, broadcast: 'ff:ff:ff:ff:ff:ff' })),
      ),
    ),
    section(
      'ip-addr',
      JSON.stringify(
        nics.map((n) => ({
          ifname: n.ifName,
          address: n.mac,
          addr_info: [
            { family: 'inet', local: n.v4, prefixlen: n.v4.startsWith('10.') ? 19 : 20 },
            { family: 'inet6', local: n.v6, prefixlen: 64 },
          ],
        })),
      ),
    ),
    section('ip-route', JSON.stringify([{ dst: 'default', gateway, dev: 'ens26np0', protocol: 'dhcp' }])),
  ].join('');
  const fromXml = (tag: string) =>
    [...withProcs.matchAll(new RegExp(`<${tag}>([^<]+)</${tag}>`, 'g'))].map((m) => m[1] ?? '');
  const secrets = [
    ...nics.flatMap((n) => [n.mac, n.v4, n.v6]),
    gateway,
    ...fromXml('serial').filter((x) => x !== 'N/A'),
    ...fromXml('uuid').filter((x) => x !== 'N/A'),
    ...fromXml('clusterUuid').filter((x) => !/^[0-]+$/.test(x)),
    ...procs.flatMap((p) => [p.pid, p.name]),
  ];
  return { text, secrets };
}

describe('capture node --anonymize', () => {
  it('writes no MAC, address, gateway, serial, UUID, cluster UUID or process of the node, and the profile renders the same slices but for those', () => {
    const dir = mkdtempSync(join(tmpdir(), 'capture-anon-'));
    for (const { file } of REAL_XML) {
      const { text, secrets } = nodeBundle(read(file));
      const bundle = join(dir, `${file}.txt`);
      writeFileSync(bundle, text);
      const out = join(dir, `${file}.yaml`);
      const r = fakegpu('capture', 'node', '--bundle', bundle, '--anonymize', '--output-file', out);
      assert.equal(r.code, 0, r.stderr);
      const written = readFileSync(out, 'utf8');
      for (const secret of secrets)
        assert.ok(
          !written.includes(secret),
          `${file}: ${JSON.stringify(secret)} is in the anonymized profile`,
        );
      const v = fakegpu('validate', out);
      assert.equal(v.code, 0, `${file}: ${v.stderr}`);
      const anonymous = parseProfileText(written, out);
      const read1 = readNodeInputs(
        Object.fromEntries(
          Object.entries(parseBundle(text, bundle).sections).map(([k, t]) => [k, { text: t, source: k }]),
        ),
      );
      const plain = captureNode(read1.node, { anonymize: false }).profile;
      const opts = renderOpts('n1', { nics: { driverName: 'dra.net', standardNumaNode: false } });
      const diff = diffSlices(
        renderSlices({ name: file, preset: null, spec: plain.spec }, opts).items,
        renderSlices({ name: file, preset: null, spec: mergeOverPreset(anonymous.spec) }, opts).items,
        new Set(['uuid', 'parentUUID', 'mac', 'ipv4']),
      );
      assert.deepEqual(diff.differences, [], file);
      assert.ok(
        diff.ignored.some((d) => d.field === 'attribute dra.net/mac') &&
          diff.ignored.some((d) => d.field === 'attribute dra.net/ipv4'),
        `${file}: MACs and addresses differ`,
      );
      assert.match(anonymous.spec.nics?.[0]?.ipv4 ?? '', /^192\.0\.2\.1\/19$/);
    }
  });

  it('takes every section of the bundle as a file of its own too, each by its own flag, to the same profile', () => {
    const dir = mkdtempSync(join(tmpdir(), 'capture-flags-'));
    const { text } = nodeBundle(read(REAL_XML[0]?.file ?? ''));
    const bundle = join(dir, 'capture.txt');
    writeFileSync(bundle, text);
    const sections = parseBundle(text, bundle).sections;
    // The script's section → its stand-alone flag; a new section without one fails here.
    const flag: Record<Section, string> = {
      'nvidia-smi-xml': '--nvidia-smi-xml',
      topo: '--topo',
      'mig-lgip': '--mig-lgip',
      'mig-lgipp': '--mig-lgipp',
      lspci: '--lspci',
      pci: '--sysfs',
      net: '--net',
      rdma: '--rdma',
      ibdev2netdev: '--ibdev2netdev',
      'ip-link': '--ip-link',
      'ip-addr': '--ip-addr',
      'ip-route': '--ip-route',
    };
    assert.deepEqual(Object.keys(flag).sort(), [...SECTIONS].sort());
    const args = Object.entries(sections).flatMap(([name, body]) => {
      const file = join(dir, `${name}.txt`);
      writeFileSync(file, body);
      return [flag[name as Section], file];
    });
    for (const name of ['net', 'rdma', 'ip-route']) assert.ok(name in sections, name);
    const separate = fakegpu('capture', 'node', ...args);
    assert.equal(separate.code, 0, separate.stderr);
    // Provenance names the input: `capture.txt (lspci)` there, `lspci.txt` here.
    const together = fakegpu('capture', 'node', '--bundle', bundle).stdout;
    assert.equal(separate.stdout, together.replace(/capture\.txt \(([a-z0-9-]+)\)/g, '$1.txt'));
  });

  it('maps IPv4 addresses one to one into the documentation ranges, keeping prefix lengths, and refuses more than they hold', () => {
    const nic = (ipv4: string) => ({
      busId: '0000:18:00.0',
      model: 'ConnectX-7',
      mac: '0e:96:fe:e8:a3:f5',
      ipv4,
    });
    assert.deepEqual(anonymizeNics([nic('10.0.0.5/24'), nic('10.0.0.6/31'), nic('10.0.0.5/24')]), [
      { busId: '0000:18:00.0', model: 'ConnectX-7', ipv4: '192.0.2.1/24' },
      { busId: '0000:18:00.0', model: 'ConnectX-7', ipv4: '192.0.2.2/31' },
      { busId: '0000:18:00.0', model: 'ConnectX-7', ipv4: '192.0.2.1/24' },
    ]);
    const many = Array.from({ length: 763 }, (_, i) => nic(`10.0.${i >> 8}.${i & 255}/16`));
    assert.equal(anonymizeNics(many.slice(0, 762)).at(-1)?.ipv4, '203.0.113.254/16');
    refused(
      () => anonymizeNics(many),
      /^--anonymize: the NICs have more than 762 distinct IPv4 addresses, the number the documentation ranges hold$/,
    );
  });
});

describe('fakegpu diff', () => {
  it('finds no difference between each real capture and the profile it is rendered from', () => {
    for (const c of realCaptures()) {
      const profile = parseProfileText(c.profile, c.file);
      const r = compareNode({ name: c.file, preset: null, spec: mergeOverPreset(profile.spec) }, c.slices, {
        kubernetesVersion: K8S,
        ignore: new Set(),
      });
      assert.equal(r.release, '25.12', `${c.file}: the release read from the slice names`);
      if (c.exact) assert.deepEqual(r.differences, [], c.file);
      // A hand-trimmed NIC capture lacks attributes; what differs is only what it left out.
      else for (const d of r.differences) assert.equal(d.capture, null, `${c.file}: ${d.where} ${d.field}`);
    }
  });

  it('of the real captures as kubectl saved them: empty, the trimmed GB200 one once told what it lacks', () => {
    for (const c of realCaptures()) {
      const args = ['diff', '--capture', c.file, '-p', c.profileFile];
      const r = fakegpu(...args);
      assert.equal(r.code, c.exact ? 0 : 3, `${c.file}: ${r.stderr}`);
      assert.match(r.stdout, c.exact ? /^identical: \d+ device\(s\)$/m : /^32 difference\(s\)/m, c.file);
      if (c.exact) continue;
      const trimmed = fakegpu(...args, '--ignore', 'alias,ebpf,encapsulation,pciSubsystem');
      assert.equal(trimmed.code, 0, trimmed.stdout);
    }
  });

  it('lists a changed attribute, a missing device and a slice count, and leaves ignored fields apart', () => {
    const p = resolveProfile('dgx-h100');
    const opts = renderOpts('n1');
    const mine = renderSlices(p, opts).items;
    const other = renderSlices(p, { ...opts, nodeName: 'n2' }).items.map((s) => ({
      ...s,
      spec: { ...s.spec, nodeName: 'n1' },
    }));
    const r = diffSlices(mine, other, new Set(['uuid']));
    assert.deepEqual(r.differences, []);
    assert.equal(r.ignored.length, 8);
    const changed = structuredClone(mine);
    const devices = changed[0]?.spec.devices ?? [];
    const [first] = devices;
    assert.ok(first?.attributes);
    first.attributes.productName = { string: 'NVIDIA H100 PCIe' };
    devices.pop();
    const d = diffSlices(changed, mine);
    assert.deepEqual(d.differences, [
      {
        where: 'gpu.nvidia.com gpu-0',
        field: 'attribute productName',
        capture: 'string "NVIDIA H100 PCIe"',
        fakegpu: 'string "NVIDIA H100 80GB HBM3"',
      },
      { where: 'gpu.nvidia.com gpu-7', field: 'device', capture: null, fakegpu: 'present' },
    ]);
  });

  it('counts a device published twice in one pool as a difference, never "identical"', () => {
    const mine = renderSlices(resolveProfile('aws-g4dn.xlarge'), renderOpts('n1')).items;
    const twice = structuredClone(mine);
    const [slice] = twice;
    const [device] = slice?.spec.devices ?? [];
    assert.ok(slice && device);
    slice.spec.devices?.push(structuredClone(device));
    const d = diffSlices(twice, mine);
    assert.deepEqual(d.differences, [
      { where: 'gpu.nvidia.com gpu-0', field: 'copies', capture: '2', fakegpu: '1' },
    ]);
    assert.deepEqual(d.devices, { capture: 2, fakegpu: 1 });
    assert.match(
      renderDiff(d, { capture: 'capture', fakegpu: 'fakegpu' }),
      /^1 difference\(s\) over 2 captured/m,
    );
  });

  it('exits 3 on a difference and 0 on none, printing what differs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'diff-'));
    const list = renderSlices(resolveProfile('dgx-a100'), renderOpts('n1', { release: '0.4' }));
    writeFileSync(join(dir, 'same.json'), JSON.stringify(list));
    const same = fakegpu('diff', '--capture', join(dir, 'same.json'), '-p', 'dgx-a100');
    assert.equal(same.code, 0, same.stderr);
    assert.equal(
      same.stdout,
      'node n1, NVIDIA DRA driver 0.4; compared gpu.nvidia.com\nidentical: 8 device(s)\n',
    );
    const other = fakegpu('diff', '--capture', join(dir, 'same.json'), '-p', 'dgx-h100');
    assert.equal(other.code, 3);
    assert.match(
      other.stdout,
      /^gpu\.nvidia\.com gpu-0: attribute productName: capture string "NVIDIA A100-SXM4-40GB", fakegpu string "NVIDIA H100 80GB HBM3"$/m,
    );
    const nodes = fakegpu('diff', '--capture', join(dir, 'same.json'), '-p', 'dgx-a100', '--node', 'n9');
    assert.equal(nodes.code, 1);
    assert.equal(nodes.stderr, 'fakegpu: --node-name: "n9" has no slice in the capture; its nodes: n1\n');
  });
});

describe('slices read back into a machine', () => {
  it('renders every preset (plain, dynamic MIG, every release) and the static MIG fixtures back to the same slices', () => {
    const refs = [...PRESETS.map((x) => x.name), join(fixtures, 'profiles', 'dgx-a100-mig.yaml')];
    let checked = 0;
    for (const ref of refs)
      for (const dynamicMig of ref.endsWith('.yaml') ? [false] : [false, true])
        for (const release of ['25.12', '0.4', '0.5'] as const) {
          const slices = renderSlices(
            resolveProfile(ref),
            renderOpts('n1', {
              dynamicMig,
              release,
              nics: { driverName: 'dra.net', standardNumaNode: false },
            }),
          ).items;
          const m = machineFromSlices('n1', slices);
          assert.equal(
            m.dynamicMig,
            slices.some((s) => (s.spec.sharedCounters ?? []).length > 0),
          );
          const r = compareNode({ name: 'back', preset: null, spec: m.spec }, slices, {
            kubernetesVersion: K8S,
            ignore: new Set(),
          });
          assert.deepEqual(r.differences, [], `${ref} dynamicMig=${dynamicMig} release=${release}`);
          checked++;
        }
    assert.ok(checked > 90);
  });

  it('refuses slices of a NIC it does not know, naming the device', () => {
    const [c] = realCaptures();
    assert.ok(c);
    const slices = structuredClone(c.slices);
    const nic = slices[1]?.spec.devices?.[0];
    assert.ok(nic?.attributes);
    nic.attributes['dra.net/pciDevice'] = { string: 'Frobnicator 9000' };
    refused(
      () => machineFromSlices(slices[0]?.spec.nodeName ?? '', slices),
      /device pci-.+: ".+ Frobnicator 9000" is not in fakegpu's NIC catalog/,
    );
  });

  it('writes YAML the profile parser reads back', () => {
    const r = fakegpu(
      'capture',
      'node',
      '--nvidia-smi-xml',
      join(smiDir, 'telegraf-a100-sxm4-80gb-mig.xml'),
      '--anonymize',
    );
    assert.equal(r.code, 0, r.stderr);
    const doc = parse(r.stdout) as unknown;
    const profile = parseProfileText(JSON.stringify(doc), 'stdout');
    assert.equal(profile.spec.gpus?.length, 1);
    assert.equal(r.stderr, '');
  });
});

describe('capture cluster', () => {
  const opts = (nodeName: string): RenderOptions =>
    renderOpts(nodeName, { nics: { driverName: 'dra.net', standardNumaNode: false } });
  const node = (name: string, labels: Record<string, string>, taints: Taint[] = []): ClusterNode => ({
    metadata: { name, labels: { 'kubernetes.io/hostname': name, type: 'kwok', ...labels } },
    spec: { taints: [{ key: 'kwok.x-k8s.io/node', value: 'fake', effect: 'NoSchedule' }, ...taints] },
  });
  const shapes: [string, string, Record<string, string>][] = [
    ['a-0', 'dgx-a100', { 'node.kubernetes.io/instance-type': 'p4d' }],
    ['a-1', 'dgx-a100', { 'node.kubernetes.io/instance-type': 'p4d' }],
    ['h-0', 'dgx-h100', { 'karpenter.sh/nodepool': 'h100' }],
    ['g-0', 'aws-g4dn.xlarge', {}],
  ];
  const slices = shapes.flatMap(([n, preset]) => renderSlices(resolveProfile(preset), opts(n)).items);
  const nodes = shapes.map(([n, , labels]) =>
    node(n, labels, n.startsWith('a') ? [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }] : []),
  );
  nodes[1]?.spec?.taints?.push({ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' });

  it('groups nodes of one machine into pools named by their pool label, with the labels and taints they share', () => {
    const c = captureCluster(nodes, slices, K8S);
    assert.deepEqual(
      c.pools.map((p) => [p.name, p.nodes, p.dynamicMig]),
      [
        ['p4d', ['a-0', 'a-1'], false],
        ['pool-1', ['g-0'], false],
        ['h100', ['h-0'], false],
      ],
    );
    const p4d = c.pools[0];
    assert.ok(p4d);
    assert.deepEqual(p4d.labels, { type: 'kwok', 'node.kubernetes.io/instance-type': 'p4d' });
    assert.deepEqual(p4d.taints, [
      { key: 'kwok.x-k8s.io/node', value: 'fake', effect: 'NoSchedule' },
      { key: 'nvidia.com/gpu', effect: 'NoSchedule' },
    ]);
    assert.ok(
      p4d.spec.gpus?.every((g) => g.uuid === undefined),
      'UUIDs are per node, not per pool',
    );
    assert.deepEqual(c.verbatim, []);
  });

  it('replays: every node of a written pools file renders the slices it was captured with', () => {
    const c = captureCluster(nodes, slices, K8S);
    const dir = mkdtempSync(join(tmpdir(), 'cluster-capture-'));
    const { pools: path } = writeCapture(dir, c, 'test');
    const pools = parsePools(readFileSync(path, 'utf8'), path);
    let compared = 0;
    for (const [name, m] of pools.byName)
      for (const n of m.nodes?.names ?? []) {
        const captured = slices.filter((s) => s.spec.nodeName === n);
        const replayed = renderSlices(m.profile, { ...opts(n), dynamicMig: m.dynamicMig ?? false }).items;
        assert.deepEqual(diffSlices(captured, replayed).differences, [], `${name}/${n}`);
        compared++;
      }
    assert.equal(compared, 4);
    const profile = parseProfileText(readFileSync(join(dir, 'profiles', 'p4d.yaml'), 'utf8'), 'p4d.yaml');
    assert.equal(profile.provenance?.busIds?.status, 'confirmed');
  });

  it('keeps what it cannot reproduce verbatim, and says why', () => {
    const changed = structuredClone(slices);
    const g = changed.find((s) => s.spec.nodeName === 'g-0');
    const [dev] = g?.spec.devices ?? [];
    assert.ok(dev?.attributes);
    dev.attributes['gpu.nvidia.com/extra'] = { string: 'x' };
    const cd: ResourceSlice = {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { name: 'cd' },
      spec: {
        driver: 'compute-domain.nvidia.com',
        nodeName: 'h-0',
        pool: { name: 'h-0', generation: 1, resourceSliceCount: 1 },
      },
    };
    const c = captureCluster(nodes, [...changed, cd], K8S);
    assert.deepEqual(
      c.verbatim.map((v) => [v.node, v.why]),
      [['g-0', 'gpu.nvidia.com gpu-0: attribute gpu.nvidia.com/extra differs']],
    );
    assert.deepEqual([...c.otherDrivers.keys()], ['compute-domain.nvidia.com']);
  });

  it('from saved files on the command line: a table of pools, and refusals in one line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cluster-cli-'));
    writeFileSync(
      join(dir, 'slices.json'),
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: slices }),
    );
    writeFileSync(join(dir, 'nodes.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes }));
    const out = join(dir, 'out');
    const r = fakegpu(
      'capture',
      'cluster',
      '--slices',
      join(dir, 'slices.json'),
      '--nodes',
      join(dir, 'nodes.json'),
      '--output-dir',
      out,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      `POOL     NODES   GPUS                DYNAMIC MIG\np4d      2       8x A100-SXM4-40GB   no\npool-1   1       1x T4               no\nh100     1       8x H100-SXM5-80GB   no\nwrote ${join(out, 'pools.yaml')}\n`,
    );
    const both = fakegpu(
      'capture',
      'cluster',
      '--slices',
      join(dir, 'slices.json'),
      '--kubeconfig',
      '/nope',
      '--output-dir',
      out,
    );
    assert.equal(both.code, 1);
    assert.equal(both.stderr, 'fakegpu: --slices: give --slices (saved) or --kubeconfig (live), not both\n');
    const up = fakegpu('cluster', 'up', '--kwok-pools', join(out, 'pools.yaml'), '--kwok-nodes', '3');
    assert.equal(up.code, 1);
    assert.equal(
      up.stderr,
      'fakegpu: --kwok-pools: the pools list their nodes and machines; leave out --kwok-nodes\n',
    );
    const head = 'apiVersion: fakegpu.dev/v1alpha1\nkind: FleetPools\npools:\n';
    writeFileSync(
      join(dir, 'no-nodes.yaml'),
      `${head}  a: { profile: dgx-h100, nodes: { count: 2 } }\n  b: { profile: dgx-h100 }\n`,
    );
    const noNodes = fakegpu('cluster', 'up', '--kwok-pools', join(dir, 'no-nodes.yaml'));
    assert.equal(noNodes.code, 1);
    assert.equal(
      noNodes.stderr,
      'fakegpu: --kwok-pools: pools.b.nodes: missing: give names or a count of the nodes to create\n',
    );
    writeFileSync(
      join(dir, 'too-many.yaml'),
      `${head}  a: { profile: dgx-h100, nodes: { count: 60000 } }\n  b: { profile: aws-g4dn.xlarge, nodes: { count: 40001 } }\n`,
    );
    const tooMany = fakegpu('cluster', 'up', '--kwok-pools', join(dir, 'too-many.yaml'));
    assert.equal(tooMany.code, 1);
    assert.equal(
      tooMany.stderr,
      'fakegpu: --kwok-pools: the pools list 100001 nodes; cluster up creates at most 100000\n',
    );
  });

  it('says in one line that the cluster to capture is not there', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cluster-gone-'));
    const kubeconfig = join(dir, 'kubeconfig');
    // Port 9 (discard) is closed on any machine that runs these tests: the connection is refused at once.
    writeFileSync(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]\n' +
        'users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const r = fakegpu('capture', 'cluster', '--kubeconfig', kubeconfig, '--output-dir', join(dir, 'out'));
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^fakegpu: --kubeconfig: listing the cluster failed: .*ECONNREFUSED 127\.0\.0\.1:9\n$/,
    );
    assert.equal(existsSync(join(dir, 'out')), false, 'nothing written');
  });
});
