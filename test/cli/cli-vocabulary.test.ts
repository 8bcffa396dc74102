import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../src/process/repo.js';

/**
 * One vocabulary over every command, the kubectl way: `-o` is an output format and never a file, one node
 * flag, one `--kubernetes-version`, `--no-nics` wherever NICs are published or read, examples in every
 * help; usage errors are one line naming the command's help and exit 2.
 */

const bin = join(REPO_ROOT, 'bin', 'fakegpu.js');
const SMI = join(REPO_ROOT, 'test', 'fixtures', 'nvidia-smi', 'telegraf-a100-sxm4-80gb-mig.xml');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** What the command left in its working directory, which starts empty. */
  written: string[];
}

function fakegpu(...args: string[]): Run {
  const cwd = mkdtempSync(join(tmpdir(), 'fakegpu-vocab-'));
  // A time limit: a check that regressed would otherwise leave a plugin or fleet running.
  const r = spawnSync(process.execPath, [bin, ...args], { cwd, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, written: readdirSync(cwd) };
}

const lines = (s: string): number => s.split('\n').filter((l) => l !== '').length;

/** A usage error: exit 2, nothing on stdout, one line naming the command's help, nothing written. */
function assertUsage(r: Run, help: string, what: RegExp): void {
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stdout, '');
  assert.equal(lines(r.stderr), 1, r.stderr);
  assert.match(r.stderr, what);
  assert.ok(r.stderr.endsWith(` (see '${help} --help')\n`), r.stderr);
  assert.deepEqual(r.written, []);
}

/** Bad input: exit 1, nothing on stdout, one line. */
function assertInput(r: Run, line: RegExp): void {
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stdout, '');
  assert.equal(lines(r.stderr), 1, r.stderr);
  assert.match(r.stderr, line);
}

/** A slice capture of a DGX H100 `n1` with its NICs, as `diff --capture` reads it. */
function capture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-vocab-capture-'));
  const r = fakegpu('render', '-p', 'dgx-h100', '-n', 'n1', '-o', 'json');
  assert.equal(r.code, 0, r.stderr);
  const file = join(dir, 'slices.json');
  writeFileSync(file, r.stdout);
  return file;
}
const slices = capture();

describe('-o is an output format on every command, never a file', () => {
  // Each command with the formats it takes and the arguments it needs to run offline.
  const commands: [string, string[], string[]][] = [
    ['profiles', [], ['json', 'yaml', 'wide', 'name']],
    ['render', ['-p', 'dgx-h100', '-n', 'n1'], ['yaml', 'json']],
    ['topo', ['-p', 'dgx-h100'], ['json', 'yaml']],
    ['diff', ['--capture', slices, '-p', 'dgx-h100'], ['json', 'yaml']],
    ['capture node', ['--nvidia-smi-xml', SMI], ['yaml', 'json']],
    ['export karpenter', [], ['yaml', 'json']],
  ];
  for (const [command, args, formats] of commands) {
    // export karpenter renders every instance type: its formats run once, in the --no-nics test.
    for (const format of command === 'export karpenter' ? [] : formats)
      it(`${command} -o ${format}: that format on stdout, no file`, () => {
        const r = fakegpu(...command.split(' '), ...args, '-o', format);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(r.written, []);
        if (format === 'json') assert.doesNotThrow(() => JSON.parse(r.stdout) as unknown);
        if (format === 'yaml') assert.equal(typeof parse(r.stdout), 'object');
        assert.ok(r.stdout.length > 0);
      });
    for (const bad of ['table', 'out.yaml'])
      it(`${command} -o ${bad}: a usage error in one line naming the formats`, () => {
        const r = fakegpu(...command.split(' '), ...args, '-o', bad);
        assertUsage(
          r,
          `fakegpu ${command}`,
          new RegExp(
            `^fakegpu: -o, --output: "${bad.replace('.', '\\.')}" is not an output format of ${command}; allowed: ${formats.join(', ')}`,
          ),
        );
      });
  }

  it('profiles -o name lists the presets; -o wide adds their descriptions', () => {
    const names = fakegpu('profiles', '-o', 'name').stdout.split('\n').filter(Boolean);
    assert.ok(names.includes('dgx-h100'));
    const wide = fakegpu('profiles', '-o', 'wide').stdout;
    assert.match(wide.split('\n')[0] ?? '', /\bDESCRIPTION$/);
  });

  it('capture node writes a file only through --output-file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-vocab-out-'));
    const r = fakegpu(
      'capture',
      'node',
      '--nvidia-smi-xml',
      SMI,
      '-o',
      'json',
      '--output-file',
      join(dir, 'p.json'),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.deepEqual(readdirSync(dir), ['p.json']);
    assert.equal(fakegpu('validate', join(dir, 'p.json')).code, 0);
    const old = fakegpu('capture', 'node', '--nvidia-smi-xml', SMI, '-o', 'my-node.yaml');
    assertUsage(old, 'fakegpu capture node', /to write a file give --output-file/);
  });

  for (const [command, flag, extra] of [
    ['capture cluster', '--output-dir', ['--slices', slices]],
    ['image build', '--output-file', []],
  ] as const)
    it(`${command} -o: refused before anything runs, naming ${flag}`, () => {
      const r = fakegpu(...command.split(' '), ...extra, '-o', 'json');
      assertUsage(
        r,
        `fakegpu ${command}`,
        new RegExp(
          `^fakegpu: -o, --output: "json" is not an output format: ${command} prints none; give where it writes with ${flag}`,
        ),
      );
    });

  for (const [command, args] of [
    ['validate', ['dgx-h100']],
    ['capture script', []],
    ['cluster status', []],
    ['fault inject', []],
    ['demo', []],
    ['fleet', []],
    ['plugin', ['-n', 'n1', '-p', 'dgx-h100']],
    ['cluster up', []],
  ] as const)
    it(`${command} takes no -o: one line, exit 2`, () => {
      const r = fakegpu(...command.split(' '), ...args, '-o', 'json');
      const path = command;
      assertUsage(r, `fakegpu ${path}`, /^fakegpu: unknown option '-o'/);
    });
});

describe('one node flag: -n, --node-name (and --node, hidden, as before)', () => {
  const commands: [string, string[], RegExp][] = [
    ['render', ['-p', 'dgx-h100'], /^fakegpu: --node-name: "Node_1" is not a valid node name/],
    ['topo', ['-p', 'dgx-h100'], /^fakegpu: --node-name: "Node_1" is not a valid node name/],
    [
      'diff',
      ['--capture', slices, '-p', 'dgx-h100'],
      /^fakegpu: --node-name: "Node_1" has no slice in the capture; its nodes: n1/,
    ],
    ['fault inject', ['--xid', '79'], /^fakegpu: --node-name: "Node_1" is not a valid node name/],
    ['fault clear', [], /^fakegpu: --node-name: "Node_1" is not a valid node name/],
    ['plugin', ['-p', 'dgx-h100'], /^fakegpu: --node-name: "Node_1" is not a valid node name/],
    // Refused before anything starts, so these never bring up a cluster.
    ['cluster up', [], /^fakegpu: --node-name: "Node_1" is not a valid node name/],
    [
      'demo',
      ['--dir', join(tmpdir(), 'fakegpu-vocab-no-cluster')],
      /^fakegpu: --node-name: "Node_1" is not a valid node name/,
    ],
  ];
  for (const [command, args, line] of commands)
    for (const flag of command === 'plugin' ? ['-n', '--node-name'] : ['-n', '--node-name', '--node'])
      it(`${command} ${flag}`, () => {
        assertInput(fakegpu(...command.split(' '), ...args, flag, 'Node_1'), line);
      });

  it('the three spellings render the same node; help shows one', () => {
    const outs = ['-n', '--node-name', '--node'].map((f) => fakegpu('render', '-p', 'dgx-a100', f, 'n1'));
    for (const r of outs) assert.equal(r.code, 0, r.stderr);
    assert.equal(outs[1]?.stdout, outs[0]?.stdout);
    assert.equal(outs[2]?.stdout, outs[0]?.stdout);
    for (const command of [
      'render',
      'topo',
      'diff',
      'cluster up',
      'demo',
      'fault inject',
      'fault clear',
      'plugin',
    ]) {
      const help = fakegpu(...command.split(' '), '--help').stdout;
      assert.match(help, /-n, --node-name <name>/, command);
      assert.doesNotMatch(help, /--node </, command);
    }
  });
});

describe('one --kubernetes-version: a release or a full version, one parser, one message', () => {
  const bad =
    /^fakegpu: --kubernetes-version: "banana" is not a Kubernetes version; expected <major>\.<minor>\[\.<patch>\]/;
  const commands: [string, string[]][] = [
    ['render', ['-p', 'dgx-h100', '-n', 'n1']],
    ['diff', ['--capture', slices, '-p', 'dgx-h100']],
    ['export karpenter', []],
    ['capture cluster', ['--slices', slices, '--output-dir', join(tmpdir(), 'fakegpu-vocab-never')]],
    ['cluster up', []],
  ];
  for (const [command, args] of commands)
    it(`${command}: the same refusal and the same help`, () => {
      assertInput(fakegpu(...command.split(' '), ...args, '--kubernetes-version', 'banana'), bad);
      assert.match(
        fakegpu(...command.split(' '), '--help').stdout.replace(/\s+/g, ' '),
        /--kubernetes-version <version> Kubernetes version, a release \(1\.37\) or a full version \(1\.37\.2\)/,
      );
    });

  it('render takes a release as its .0', () => {
    const release = fakegpu('render', '-p', 'dgx-h100', '-n', 'n1', '--kubernetes-version', '1.34');
    const full = fakegpu('render', '-p', 'dgx-h100', '-n', 'n1', '--kubernetes-version', '1.34.0');
    assert.equal(release.code, 0, release.stderr);
    assert.equal(release.stdout, full.stdout);
  });

  it('cluster up names what it builds for a version it does not', () => {
    assertInput(
      fakegpu('cluster', 'up', '--kubernetes-version', '1.37.99'),
      /^fakegpu: --kubernetes-version: "1\.37\.99" is not a release fakegpu builds; it builds 1\.34 /,
    );
  });
});

describe('--no-nics wherever NICs are published or read', () => {
  const nicDriver = /dra\.net/;
  it('render, export karpenter: no DRANET slice', () => {
    for (const args of [
      ['render', '-p', 'dgx-h100', '-n', 'n1'],
      ['export', 'karpenter'],
    ]) {
      const r = fakegpu(...args, '--no-nics', '-o', 'json');
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stdout, /"driver": "dra\.net"/);
      // Nor any trace of the NICs: an attribute of theirs is no node's attribute.
      assert.doesNotMatch(r.stdout, /dra\.net\//);
      if (args[0] === 'render') assert.match(fakegpu(...args, '-o', 'json').stdout, nicDriver);
    }
  });

  it('topo: GPUs only', () => {
    const r = fakegpu('topo', '-p', 'dgx-h100', '--no-nics');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^dgx-h100 \(node node\): 8 GPU\(s\), 0 NIC\(s\)/);
  });

  it('diff: the capture compared without its NIC slices', () => {
    const r = fakegpu('diff', '--capture', slices, '-p', 'dgx-h100', '--no-nics');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /compared gpu\.nvidia\.com\n/);
  });

  it('validate, capture node: accepted; capture node writes no NICs', () => {
    const v = fakegpu('validate', 'dgx-h100', '--no-nics');
    assert.equal(v.code, 0, v.stderr);
    assert.match(v.stdout, /no NIC\(s\) \(--no-nics\)/, 'the NICs left out are not counted');
    const r = fakegpu('capture', 'node', '--nvidia-smi-xml', SMI, '--no-nics');
    assert.equal(r.code, 0, r.stderr);
    const profile = parse(r.stdout) as { spec: { nics?: unknown } };
    assert.equal(profile.spec.nics, undefined);
  });

  it('fleet, plugin, uninstall-check, cluster up: listed in their help', () => {
    for (const command of [['fleet'], ['plugin'], ['uninstall-check'], ['cluster', 'up']])
      assert.match(fakegpu(...command, '--help').stdout, /--no-nics/, command.join(' '));
  });
});

describe('bare commands, help and unknown flags', () => {
  it('bare fakegpu is its help on stdout, exit 0, as a bare kubectl is', () => {
    const r = fakegpu();
    assert.equal(r.code, 0);
    assert.equal(r.stderr, '');
    assert.match(r.stdout, /^Usage: fakegpu \[options\] \[command\]\n/);
  });

  for (const [group, commands] of [
    ['export', 'karpenter, karpenter-kwok'],
    ['capture', 'node, cluster, script'],
    ['fault', 'inject, clear, list'],
    ['cluster', 'up, down, restart, status'],
    ['image', 'build'],
  ] as const)
    it(`bare ${group}: one line naming its commands, exit 2`, () => {
      assertUsage(
        fakegpu(group),
        `fakegpu ${group}`,
        new RegExp(`^fakegpu: ${group}: give a command: ${commands} \\(see 'fakegpu ${group} --help'\\)\\n$`),
      );
    });

  it('help help, help of a nested command', () => {
    for (const args of [
      ['help', 'help'],
      ['capture', 'help', 'help'],
    ]) {
      const r = fakegpu(...args);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '');
      assert.match(r.stdout, /^Usage: fakegpu (capture )?help \[command\.\.\.\]\n/);
    }
    const node = fakegpu('help', 'capture', 'node');
    assert.equal(node.code, 0);
    assert.equal(node.stdout, fakegpu('capture', 'node', '--help').stdout);
    assertUsage(
      fakegpu('help', 'capture', 'nope'),
      'fakegpu capture',
      /^fakegpu: capture help: unknown command "nope"; commands: node, cluster, script/,
    );
  });

  for (const command of [
    'profiles',
    'render',
    'export karpenter',
    'validate',
    'topo',
    'diff',
    'capture node',
    'capture cluster',
    'fault list',
    'report',
    'cluster up',
    'demo',
    'fleet',
    'plugin',
    'uninstall-check',
    'image build',
  ])
    it(`${command} --bogus: one line pointing at its help, exit 2`, () => {
      assertUsage(
        fakegpu(...command.split(' '), '--bogus'),
        `fakegpu ${command}`,
        /^fakegpu: (unknown option '--bogus'|required option .* not specified|missing required argument)/,
      );
    });

  it('a long unknown option is quoted cut', () => {
    const r = fakegpu('profiles', `--${'x'.repeat(10_000)}`);
    assert.equal(r.code, 2);
    assert.ok(r.stderr.length < 300, r.stderr);
  });
});

describe('every help ends with examples, and the offline ones run', () => {
  const commands = [
    '',
    'profiles',
    'render',
    'export',
    'export karpenter',
    'export karpenter-kwok',
    'validate',
    'topo',
    'diff',
    'capture',
    'capture node',
    'capture cluster',
    'capture script',
    'fleet',
    'cluster',
    'cluster up',
    'cluster down',
    'cluster restart',
    'cluster status',
    'image',
    'image build',
    'plugin',
    'compute-domain-controller',
    'demo',
    'fault',
    'fault inject',
    'fault clear',
    'fault list',
    'report',
    'uninstall-check',
  ];
  // Quick enough to run each of their examples here.
  const offline = new Set(['profiles', 'render', 'topo']);
  for (const command of commands)
    it(`fakegpu ${command} --help`, () => {
      const r = fakegpu(...command.split(' ').filter(Boolean), '--help');
      assert.equal(r.code, 0, r.stderr);
      const [, block] = r.stdout.split('\nExamples:\n');
      assert.ok(block !== undefined, `no examples: ${r.stdout}`);
      const examples = block.split('\n').filter(Boolean);
      assert.ok(examples.length > 0);
      assert.ok(examples.some((e) => e.includes('fakegpu ')));
      for (const e of examples) {
        const words = e.trim().split(/\s+/);
        if (words[0] !== 'fakegpu' || !offline.has(words[1] ?? '') || /[>|'"$]/.test(e)) continue;
        const run = fakegpu(...words.slice(1));
        assert.equal(run.code, 0, `${e}: ${run.stderr}`);
      }
    });
});
