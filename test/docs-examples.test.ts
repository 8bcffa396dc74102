import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { validateCommand } from '../src/cli/commands.js';
import { REPO_ROOT } from '../src/process/repo.js';
import {
  EXAMPLE_FOLDERS,
  exampleFiles,
  examplesChecked,
  exampleProblems,
  manifestObjects,
  readExample,
} from './support/examples.js';
import { docCommands, docFiles, kindOf, outputMatches, variants } from './support/doc-commands.js';

/** `fakegpu validate <file>`'s one line, or its refusal thrown. */
async function validate(file: string): Promise<string> {
  let out = '';
  await validateCommand((s) => {
    out += s;
  }).parseAsync([file], { from: 'user' });
  return out;
}

/** A scratch repository of `files` (path → text), removed after `fn`. */
function withRepo<T>(files: Record<string, string>, fn: (root: string) => T): T {
  const root = mkdtempSync(join(tmpdir(), 'fakegpu-docs-examples-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    return fn(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const POD = 'apiVersion: v1\nkind: Pod\nmetadata: { name: p }\n';

describe('examples/ and the docs that show them', () => {
  it('every YAML the docs show is an example file, byte for byte, and every example file is shown', () => {
    assert.ok(exampleFiles(REPO_ROOT).length > 0, 'no files under examples/');
    assert.deepEqual(exampleProblems(REPO_ROOT), []);
  });

  it('every example file is in a folder some test checks', () => {
    const unchecked = exampleFiles(REPO_ROOT).filter((f) => EXAMPLE_FOLDERS[dirname(f)] === undefined);
    assert.deepEqual(unchecked, [], `folders checked: ${Object.keys(EXAMPLE_FOLDERS).join(', ')}`);
  });

  it('every example parses as YAML; the Kubernetes ones are objects with apiVersion, kind and a name', () => {
    for (const f of exampleFiles(REPO_ROOT)) {
      const objects = manifestObjects(readExample(f));
      assert.ok(objects.length > 0, `${f}: no YAML document`);
      const check = EXAMPLE_FOLDERS[dirname(f)]?.check;
      if (check === 'helm-values' || check === 'profile') continue;
      for (const o of objects) {
        const obj = o as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } };
        assert.ok(
          typeof obj.apiVersion === 'string' && typeof obj.kind === 'string',
          `${f}: an object without apiVersion and kind`,
        );
        assert.equal(typeof obj.metadata?.name, 'string', `${f}: a ${obj.kind} without metadata.name`);
      }
    }
  });

  it('every MachineProfile example passes fakegpu validate', async () => {
    const profiles = examplesChecked(REPO_ROOT, 'profile');
    assert.ok(profiles.length > 0, 'no profile examples');
    for (const f of profiles) assert.match(await validate(join(REPO_ROOT, f)), /: valid MachineProfile "/, f);
  });

  it('a profile example that does not validate is refused', async () => {
    await withRepo(
      {
        'bad.yaml': readExample('examples/profiles/lab-box.yaml').replace('1g.5gb x7', '1g.5gb x8'),
      },
      async (root) => {
        await assert.rejects(validate(join(root, 'bad.yaml')), /no free placement for 1g\.5gb/);
      },
    );
  });

  it('finds a block that differs, a marker to nothing, YAML without a marker and an example no doc shows', () => {
    const doc = [
      '# Doc',
      '',
      '<!-- example: examples/pod.yaml -->',
      '```yaml',
      POD.replace('name: p', 'name: q').trimEnd(),
      '```',
      '',
      '<!-- example: examples/gone.yaml -->',
      '',
      '```yaml',
      POD.trimEnd(),
      '```',
      '',
      '<!-- example: ../outside.yaml -->',
      '<!-- example: examples/pod.yaml -->',
      'no block here',
      '',
      '```yaml',
      'kind: Loose',
      '```',
      '',
      '```sh',
      "kubectl apply -f - <<'YAML'",
      POD.trimEnd(),
      'YAML',
      'cat <<EOF',
      'not an object',
      'EOF',
      '```',
      '',
    ].join('\n');
    withRepo(
      { 'docs/a.md': doc, 'examples/pod.yaml': POD, 'examples/orphan.yaml': POD, 'README.md': '# R\n' },
      (root) => {
        assert.deepEqual(exampleProblems(root), [
          'docs/a.md:3: the block differs from examples/pod.yaml at its line 3',
          'docs/a.md:10: examples/gone.yaml does not exist',
          'docs/a.md:18: the marker names "../outside.yaml", not a file under examples/',
          'docs/a.md:19: the marker for examples/pod.yaml is not followed by a fenced block',
          'docs/a.md: line 22: a yaml block without an example marker',
          'docs/a.md: line 27: YAML in a heredoc',
          'examples/orphan.yaml: shown in no doc (no "<!-- example: examples/orphan.yaml -->" before a block)',
        ]);
      },
    );
  });

  it('passes a doc whose block is its file', () => {
    withRepo(
      {
        'README.md': `<!-- example: examples/pod.yaml -->\n\`\`\`yaml\n${POD}\`\`\`\n`,
        'examples/pod.yaml': POD,
      },
      (root) => {
        assert.deepEqual(exampleProblems(root), []);
      },
    );
  });
});

/** A folder where a doc's commands run as a reader runs them: `fakegpu` and `npx fakegpu` on the PATH. */
function readerShell(): { bin: string; cleanup(): void } {
  const bin = mkdtempSync(join(tmpdir(), 'fakegpu-docs-bin-'));
  writeFileSync(
    join(bin, 'fakegpu'),
    `#!/bin/sh\nexec "${process.execPath}" "${join(REPO_ROOT, 'bin', 'fakegpu.js')}" "$@"\n`,
    {
      mode: 0o755,
    },
  );
  writeFileSync(join(bin, 'npx'), '#!/bin/sh\nexec "$@"\n', { mode: 0o755 });
  return {
    bin,
    cleanup: () => {
      rmSync(bin, { recursive: true, force: true });
    },
  };
}

/**
 * The files a reader brings that the docs name: their own profile, and the capture script's output from
 * a GPU node (here one of NVIDIA's real `nvidia-smi -q -x`, as the script wraps it).
 */
function readerFiles(): Record<string, string> {
  const xml = readFileSync(
    join(REPO_ROOT, 'test', 'fixtures', 'nvidia-smi', 'k8s-test-infra-h100.xml'),
    'utf8',
  );
  return {
    'my-machine.yaml': readExample('examples/profiles/lab-box.yaml'),
    'capture.txt': `fakegpu-capture v1\n=== fakegpu-capture nvidia-smi-xml ===\n${xml}=== fakegpu-capture-exit nvidia-smi-xml 0 ===\n`,
  };
}

describe('the fakegpu commands the docs show', () => {
  const commands = docFiles(REPO_ROOT).flatMap((d) => docCommands(REPO_ROOT, d));

  it('are each sorted into run offline here or shown only, since they need a cluster', () => {
    const unknown = commands.filter((c) => kindOf(c.command).startsWith('unknown'));
    assert.deepEqual(
      unknown.map((c) => `${c.where}: ${kindOf(c.command)}`),
      [],
    );
    assert.ok(commands.filter((c) => kindOf(c.command) === 'run').length >= 8, 'offline examples found');
  });

  it('run offline as printed, exit 0, and print what the doc shows under them', () => {
    const shell = readerShell();
    try {
      for (const block of new Set(commands.map((c) => c.block))) {
        const runnable = commands.filter((c) => c.block === block && kindOf(c.command) === 'run');
        if (runnable.length === 0) continue;
        withRepo(readerFiles(), (cwd) => {
          for (const dir of ['examples', 'test', 'deploy']) symlinkSync(join(REPO_ROOT, dir), join(cwd, dir));
          for (const c of runnable)
            for (const command of variants(c.command)) {
              const r = spawnSync('sh', ['-c', command], {
                cwd,
                encoding: 'utf8',
                timeout: 60_000,
                maxBuffer: 64 << 20,
                env: { ...process.env, PATH: `${shell.bin}:${process.env['PATH'] ?? ''}` },
              });
              assert.equal(r.status, 0, `${c.where}: ${command}\n${r.stderr}`);
              if (c.output !== undefined)
                assert.ok(
                  outputMatches(c.output, r.stdout),
                  `${c.where}: ${command} prints\n${r.stdout}\nwhere the doc shows\n${c.output}`,
                );
            }
        });
      }
    } finally {
      shell.cleanup();
    }
  });

  it('finds each command of a block, folds comments and continuations, and expands [--optional] flags', () => {
    const doc = [
      '```sh',
      'npx fakegpu render -p dgx-h100 \\',
      '  -n n1   # a comment',
      "kubectl get cm p -o jsonpath='{.data.p}' | npx fakegpu validate -",
      'npx fakegpu frobnicate',
      '```',
      '',
      '```console',
      '$ fakegpu topo -p dgx-h100',
      'first line',
      '…',
      '```',
      '',
    ].join('\n');
    withRepo({ 'docs/a.md': doc, 'README.md': '# R\n' }, (root) => {
      const found = docFiles(root).flatMap((d) => docCommands(root, d));
      assert.deepEqual(
        found.map((c) => [c.where, c.command, kindOf(c.command), c.output]),
        [
          ['docs/a.md:2', 'npx fakegpu render -p dgx-h100 -n n1', 'run', undefined],
          [
            'docs/a.md:4',
            "kubectl get cm p -o jsonpath='{.data.p}' | npx fakegpu validate -",
            'cluster',
            undefined,
          ],
          ['docs/a.md:5', 'npx fakegpu frobnicate', 'unknown: frobnicate', undefined],
          ['docs/a.md:9', 'fakegpu topo -p dgx-h100', 'run', 'first line\n…'],
        ],
      );
    });
    assert.deepEqual(variants('fakegpu export karpenter [--dynamic-mig] -o json'), [
      'fakegpu export karpenter -o json',
      'fakegpu export karpenter --dynamic-mig -o json',
    ]);
  });

  it('holds output to the doc line for line, `…` standing for lines or text left out', () => {
    const out = 'header\nNUMA 0\n  gpu-0\n  gpu-1\nalignment: possible\n  hint\n';
    assert.ok(outputMatches('header\nNUMA 0\n…\nalignment: …\n  hint', out));
    // The sample that lacked the output's first and last lines.
    assert.ok(!outputMatches('NUMA 0\n…\nalignment: possible', out));
    assert.ok(!outputMatches('header\nNUMA 0\n…\nalignment: possible', out));
    assert.ok(!outputMatches('header\nNUMA 1\n…', out));
  });
});
