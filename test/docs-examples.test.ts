import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
