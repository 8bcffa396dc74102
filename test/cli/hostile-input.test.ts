import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import type { ResourceSlice } from '../../src/kube/types/resource.js';
import { renderSlices } from '../../src/model/render.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import { REPO_ROOT } from '../../src/process/repo.js';

const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');
const smi = join(REPO_ROOT, 'test', 'fixtures', 'nvidia-smi', 'k8s-test-infra-t4.xml');

/**
 * The binary with a small heap and a cap on its address space, so that a read without a bound fails the
 * test (V8 out of memory, or std::bad_alloc for a Buffer) instead of eating the machine, and a time limit
 * so that a hang fails it too.
 */
function hostile(cmd: string, cwd: string): { code: number | null; stdout: string; stderr: string } {
  const node = `'${process.execPath}' --max-old-space-size=256 '${bin}'`;
  const r = spawnSync('sh', ['-c', `ulimit -v 3000000; ${cmd.replaceAll('FAKEGPU', node)}`], {
    cwd,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A home whose ~/.kube/config is /dev/zero, outside the folder the test checks for stray files. */
const zeroHome = mkdtempSync(join(tmpdir(), 'hostile-home-'));
mkdirSync(join(zeroHome, '.kube'));
symlinkSync('/dev/zero', join(zeroHome, '.kube', 'config'));

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

function slicesOf(preset: string, node: string): ResourceSlice[] {
  return renderSlices(resolveProfile(preset), {
    nodeName: node,
    dynamicMig: false,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: '0.5',
  }).items;
}

const list = (items: unknown[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

/** A node's GPU slice with `count` copies of its first device, `perSlice` to a slice. */
function manyDevices(count: number, perSlice: number): string {
  const [gpu] = slicesOf('aws-g4dn.xlarge', 'n1');
  const first = gpu?.spec.devices?.[0];
  assert.ok(gpu && first);
  const items: ResourceSlice[] = [];
  for (let at = 0; at < count; at += perSlice) {
    const s = structuredClone(gpu);
    s.metadata.name = `n1-${at}`;
    s.spec.devices = Array.from({ length: Math.min(perSlice, count - at) }, (_, i) => ({
      ...first,
      name: `gpu-${at + i}`,
    }));
    items.push(s);
  }
  return list(items);
}

/** Input files written into the test's folder before it runs; the command reads them from there. */
function inputs(): Record<string, string> {
  const [gpu] = slicesOf('aws-g4dn.xlarge', 'n1');
  assert.ok(gpu);
  const evilDriver = structuredClone(gpu);
  evilDriver.spec.driver = '../../evil';
  const evilNode = structuredClone(gpu);
  evilNode.spec.nodeName = '../../evil';
  const deep = `<nvidia_smi_log>${'<a>'.repeat(150)}${'</a>'.repeat(150)}</nvidia_smi_log>`;
  const entity = `<!DOCTYPE nvidia_smi_log [<!ENTITY a "${'a'.repeat(1000)}">]>`;
  const bomb = `${entity}<nvidia_smi_log><driver_version>${'&a;'.repeat(200)}</driver_version></nvidia_smi_log>`;
  return {
    'in/slices.json': list(slicesOf('aws-g4dn.xlarge', 'n1')),
    'in/evil-driver.json': list([gpu, evilDriver]),
    'in/evil-node.json': list([gpu, evilNode]),
    'in/one-slice-50k.json': manyDevices(50_000, 50_000),
    'in/node-50k.json': manyDevices(50_000, 128),
    'in/big.yaml': `# ${'x'.repeat(17 * 1024 * 1024)}\n`,
    'in/deep.xml': deep,
    'in/bomb.xml': bomb,
    'in/lspci.txt':
      'Slot:\t0000:18:00.0\nClass:\tInfiniband controller [0207]\nVendor:\tMellanox Technologies [15b3]\nDevice:\tMT2910 Family [ConnectX-7] [1021]\nNUMANode:\t0\n',
    'in/ip-link.json': 'ab\ncd\n',
    'in/a-file': 'x',
  };
}

const CASES: [name: string, cmd: string, stderr: RegExp][] = [
  [
    'validate /dev/zero',
    'FAKEGPU validate /dev/zero',
    /"\/dev\/zero" is larger than 4 MiB, the most fakegpu reads for a MachineProfile/,
  ],
  ['yes | validate -', 'yes | FAKEGPU validate -', /^fakegpu: stdin: "stdin" is larger than 4 MiB/],
  // What matters is that it returns: read as empty, the profile is refused as any empty file is.
  [
    'render -p of a FIFO nobody writes',
    'mkfifo in/fifo.yaml && FAKEGPU render -p in/fifo.yaml -n n1',
    /^fakegpu: /,
  ],
  ['validate a directory', 'FAKEGPU validate in/', /cannot read profile file "in\/" \(EISDIR\)/],
  [
    'capture node --nvidia-smi-xml /dev/zero',
    'FAKEGPU capture node --nvidia-smi-xml /dev/zero',
    /--nvidia-smi-xml: "\/dev\/zero" is larger than 32 MiB/,
  ],
  [
    'capture node --bundle /dev/zero',
    'FAKEGPU capture node --bundle /dev/zero',
    /--bundle: "\/dev\/zero" is larger than 64 MiB/,
  ],
  [
    'XML nested past the parser limit',
    'FAKEGPU capture node --nvidia-smi-xml in/deep.xml',
    /^fakegpu: in\/deep\.xml: more than 100 nested elements: past the XML parser's limit/,
  ],
  [
    'XML entity bomb',
    'FAKEGPU capture node --nvidia-smi-xml in/bomb.xml',
    /^fakegpu: in\/bomb\.xml: entities that expand to more than 100000 characters/,
  ],
  [
    'capture node --output-file an unwritable path',
    `FAKEGPU capture node --nvidia-smi-xml '${smi}' --output-file /proc/nope/p.yaml`,
    /^fakegpu: --output-file: cannot write "\/proc\/nope\/p\.yaml" \(ENOENT: no such file or directory\)/,
  ],
  [
    'capture node --output-file a full device',
    `FAKEGPU capture node --nvidia-smi-xml '${smi}' --output-file /dev/full`,
    /\(ENOSPC: no space left on device\)/,
  ],
  [
    'capture node --output-file a directory',
    `FAKEGPU capture node --nvidia-smi-xml '${smi}' --output-file in`,
    /cannot write "in" \(EISDIR: is a directory\)/,
  ],
  [
    'ip -j link that is not JSON',
    `FAKEGPU capture node --nvidia-smi-xml '${smi}' --lspci in/lspci.txt --ip-link in/ip-link.json`,
    /^fakegpu: ip -j link: not JSON \(Unexpected token/,
  ],
  [
    'capture cluster --output-dir a file',
    'FAKEGPU capture cluster --slices in/slices.json --output-dir in/a-file',
    /^fakegpu: --output-dir: cannot write under ".*in\/a-file" \(ENOTDIR/,
  ],
  [
    'capture cluster --output-dir under /proc',
    'FAKEGPU capture cluster --slices in/slices.json --output-dir /proc/x/y',
    /^fakegpu: --output-dir: cannot write "\/proc\/x" \(ENOENT/,
  ],
  [
    'a slice whose driver is ../../evil',
    'FAKEGPU capture cluster --slices in/evil-driver.json --output-dir a/b/out',
    /^fakegpu: --slices: in\/evil-driver\.json: item 1: spec\.driver "\.\.\/\.\.\/evil" is not a DRA driver name/,
  ],
  [
    'a slice whose node is ../../evil',
    'FAKEGPU capture cluster --slices in/evil-node.json --output-dir a/b/out',
    /item 1: spec\.nodeName "\.\.\/\.\.\/evil" is not a node name/,
  ],
  [
    '50,000 devices in one slice',
    'FAKEGPU capture cluster --slices in/one-slice-50k.json --output-dir a/b/out',
    /item 0: 50000 devices; the API allows at most 128 in one slice/,
  ],
  [
    '50,000 devices on one node',
    'FAKEGPU capture cluster --slices in/node-50k.json --output-dir a/b/out',
    /^fakegpu: node n1: 50000 devices .*; a node has at most 8192/,
  ],
  [
    'diff of 50,000 devices in one slice',
    'FAKEGPU diff --capture in/one-slice-50k.json -p aws-g4dn.xlarge',
    /^fakegpu: --capture: .*at most 128 in one slice/,
  ],
  [
    '17 MiB of YAML slices',
    'FAKEGPU capture cluster --slices in/big.yaml --output-dir a/b/out',
    /^fakegpu: --slices: 17\.0 MiB of YAML; at most 16 MiB is parsed as YAML/,
  ],
  [
    'a kubeconfig that is /dev/zero',
    'FAKEGPU capture cluster --kubeconfig /dev/zero --output-dir a/b/out',
    /^fakegpu: --kubeconfig: "\/dev\/zero" is not a regular file/,
  ],
  [
    'a default kubeconfig (~/.kube/config) that is /dev/zero',
    `HOME='${zeroHome}' KUBECONFIG= FAKEGPU capture cluster --output-dir a/b/out`,
    /^fakegpu: --kubeconfig \(default ".*\/\.kube\/config"\): ".*" is not a regular file/,
  ],
  [
    'a KUBECONFIG that names /dev/zero',
    'KUBECONFIG=/dev/zero FAKEGPU capture cluster --output-dir a/b/out',
    /^fakegpu: --kubeconfig \(default "\/dev\/zero"\): "\/dev\/zero" is not a regular file/,
  ],
];

describe('hostile input: bounded, one line, nothing written outside the output folder', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hostile-'));
  const given = inputs();
  for (const [path, text] of Object.entries(given)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }

  const written = (): string[] => filesUnder(dir).filter((f) => !(f in given) && f !== 'in/fifo.yaml');

  for (const [name, cmd, stderr] of CASES)
    it(name, () => {
      const r = hostile(cmd, dir);
      assert.equal(r.code, 1, `exit status (stderr: ${r.stderr.slice(0, 500)})`);
      assert.match(r.stderr, /^fakegpu: [^\n]*\n$/, 'exactly one line on stderr');
      assert.doesNotMatch(r.stderr, /\bat \S+:\d+/, 'no stack frame');
      assert.match(r.stderr, stderr);
      assert.equal(r.stdout, '');
      assert.deepEqual(written(), [], 'nothing written beside the inputs');
    });

  it('a good capture still writes only under --output-dir', () => {
    const r = hostile('FAKEGPU capture cluster --slices in/slices.json --output-dir a/b/out', dir);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(written(), ['a/b/out/pools.yaml', 'a/b/out/profiles/pool-0.yaml']);
    assert.match(readFileSync(join(dir, 'a/b/out/pools.yaml'), 'utf8'), /kind: FleetPools/);
  });
});
