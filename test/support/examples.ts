import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { kubectl, type Result } from './cluster.js';
import { markdownFiles } from './docs.js';

/**
 * Every YAML the docs show is a file under examples/, shown in the fenced block after a marker line
 * `<!-- example: examples/x.yaml -->` (blank lines between allowed) and held byte-equal to it, so that what a reader copies is what
 * the tests apply.
 */
export const MARKER = /^<!-- example: (\S*) -->$/;

/** How the files of one folder of examples/ are checked. */
export type ExampleCheck = 'test-cluster' | 'integrations-cluster' | 'helm-values' | 'profile' | 'parse-only';

/**
 * Each folder of examples/ and the test that checks its files. A file in a folder not listed here fails
 * the docs test, so a new kind of example cannot go unchecked by accident.
 */
export const EXAMPLE_FOLDERS: Readonly<Record<string, { check: ExampleCheck; by: string }>> = {
  examples: {
    check: 'test-cluster',
    by: 'test/integration/examples.test.ts: kubectl apply --dry-run=server on the test cluster',
  },
  'examples/integrations': {
    check: 'integrations-cluster',
    by: 'test/e2e-integrations/examples.test.ts: the same on the cluster with Karpenter and Kueue',
  },
  'examples/helm': {
    check: 'helm-values',
    by: 'test/integration/examples.test.ts: the chart rendered with them, then the same dry run',
  },
  'examples/profiles': { check: 'profile', by: 'test/docs-examples.test.ts: fakegpu validate' },
  'examples/keda': {
    check: 'parse-only',
    by: "test/docs-examples.test.ts: YAML parsing only, as no cluster fakegpu starts serves KEDA's CRDs",
  },
};

/** Every file under `root`/examples, as `examples/…`, sorted. */
export function exampleFiles(root: string): string[] {
  const walk = (rel: string): string[] =>
    readdirSync(join(root, rel), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(`${rel}/${e.name}`) : [`${rel}/${e.name}`],
    );
  return existsSync(join(root, 'examples')) ? walk('examples').sort() : [];
}

/** The example files checked the way `check` says. */
export function examplesChecked(root: string, check: ExampleCheck): string[] {
  return exampleFiles(root).filter((f) => EXAMPLE_FOLDERS[dirname(f)]?.check === check);
}

/** A marker in a doc: its 1-based line, the file it names and the fenced block after it, if any. */
export interface DocExample {
  line: number;
  path: string;
  block: string | undefined;
}

const FENCE = /^(`{3,})(\S*)\s*$/;

/** The fenced block opening at `lines[i]` and its closing line's index; undefined without one. */
function fencedBlock(
  lines: readonly string[],
  i: number,
): { lang: string; text: string; end: number } | undefined {
  const open = FENCE.exec(lines[i] ?? '');
  if (!open?.[1]) return undefined;
  for (let j = i + 1; j < lines.length; j++) {
    const close = /^(`{3,})\s*$/.exec(lines[j] ?? '');
    if (close?.[1] && close[1].length >= open[1].length) {
      const text = lines.slice(i + 1, j).join('\n');
      return { lang: open[2] ?? '', text: text === '' ? '' : `${text}\n`, end: j };
    }
  }
  return undefined;
}

/**
 * A Markdown text's example markers, and what it shows of YAML outside them: a yaml block without a
 * marker, or a heredoc that holds an object (`apiVersion:`), each as "line N: …".
 */
export function docExamples(text: string): { examples: DocExample[]; stray: string[] } {
  const lines = text.split('\n');
  const examples: DocExample[] = [];
  const stray: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const marker = MARKER.exec(lines[i] ?? '');
    if (marker) {
      // Prettier puts a blank line after an HTML comment.
      let next = i + 1;
      while (lines[next]?.trim() === '') next++;
      const b = fencedBlock(lines, next);
      examples.push({ line: i + 1, path: marker[1] ?? '', block: b?.text });
      if (b) i = b.end;
      continue;
    }
    const b = fencedBlock(lines, i);
    if (!b) continue;
    if (/^ya?ml$/i.test(b.lang)) stray.push(`line ${i + 1}: a yaml block without an example marker`);
    else stray.push(...heredocObjects(b.text).map((n) => `line ${i + 1 + n}: YAML in a heredoc`));
    i = b.end;
  }
  return { examples, stray };
}

/** The 1-based lines (within `code`) of heredocs that hold a Kubernetes object. */
function heredocObjects(code: string): number[] {
  const found: number[] = [];
  let open: { end: string; line: number; object: boolean } | undefined;
  code.split('\n').forEach((l, i) => {
    if (open) {
      if (l.trim() === open.end) {
        if (open.object) found.push(open.line);
        open = undefined;
      } else if (/^\s*apiVersion:/.test(l)) open.object = true;
      return;
    }
    const start = /<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?/.exec(l);
    if (start?.[1]) open = { end: start[1], line: i + 1, object: false };
  });
  return found;
}

/** Where two texts first differ, as a 1-based line number. */
function firstDifference(a: string, b: string): number {
  const x = a.split('\n');
  const y = b.split('\n');
  let i = 0;
  while (i < x.length && x[i] === y[i]) i++;
  return i + 1;
}

/** What one doc's markers get wrong, each as "doc:line: …". */
function markerProblems(root: string, doc: string, examples: readonly DocExample[]): string[] {
  const problems: string[] = [];
  for (const { line, path, block } of examples) {
    const at = `${doc}:${line}`;
    if (!/^examples\/[\w.-]+(\/[\w.-]+)*$/.test(path) || path.split('/').includes('..'))
      problems.push(`${at}: the marker names ${JSON.stringify(path)}, not a file under examples/`);
    else if (!existsSync(join(root, path))) problems.push(`${at}: ${path} does not exist`);
    else if (block === undefined)
      problems.push(`${at}: the marker for ${path} is not followed by a fenced block`);
    else {
      const file = readFileSync(join(root, path), 'utf8');
      if (block !== file)
        problems.push(`${at}: the block differs from ${path} at its line ${firstDifference(block, file)}`);
    }
  }
  return problems;
}

/**
 * Everything that breaks "every YAML the docs show is an example file": markers naming no file or
 * followed by no block, blocks that differ from their file, YAML shown without a marker, and example
 * files no doc shows. Empty when all is well.
 */
export function exampleProblems(root: string): string[] {
  const problems: string[] = [];
  const shown = new Set<string>();
  for (const doc of markdownFiles(root)) {
    if (!existsSync(join(root, doc))) continue;
    const { examples, stray } = docExamples(readFileSync(join(root, doc), 'utf8'));
    problems.push(...markerProblems(root, doc, examples), ...stray.map((s) => `${doc}: ${s}`));
    for (const e of examples) shown.add(e.path);
  }
  for (const f of exampleFiles(root)) {
    if (!shown.has(f)) problems.push(`${f}: shown in no doc (no "<!-- example: ${f} -->" before a block)`);
  }
  return problems;
}

/** The objects of a manifest, one per YAML document that is not empty. */
export function manifestObjects(text: string): unknown[] {
  return parseAllDocuments(text)
    .map((d) => {
      if (d.errors.length) throw new Error(d.errors[0]?.message);
      return d.toJS() as unknown;
    })
    .filter((o) => o !== null && o !== undefined);
}

/** `kubectl apply --dry-run=server` of a manifest: the API server's answer, webhooks included; nothing stored. */
export function serverDryRun(e: Exports, text: string): Result {
  return kubectl(e, ['apply', '--dry-run=server', '-f', '-'], text);
}

/** The API server accepts every object of the manifest `text` (named `what` in the failure). */
export function assertAccepted(e: Exports, what: string, text: string): void {
  const r = serverDryRun(e, text);
  assert.equal(r.code, 0, `${what}: ${r.err}`);
  const accepted = r.out.split('\n').filter((l) => l.endsWith('(server dry run)'));
  assert.equal(accepted.length, manifestObjects(text).length, `${what}: ${r.out}`);
}

/** An example file's text, by its path from the repository root. */
export function readExample(path: string): string {
  return readFileSync(join(REPO_ROOT, path), 'utf8');
}

/**
 * One test per example checked the way `check` says, each accepted by the API server of `cluster()` (the
 * suite's cluster, once its `before` has it), and one that there are such examples at all.
 */
export function itAcceptsExamples(cluster: () => Exports, check: ExampleCheck): void {
  const files = examplesChecked(REPO_ROOT, check);
  it(`has examples to check (${check})`, () => {
    assert.ok(files.length > 0);
  });
  for (const f of files) {
    it(`${f} is accepted`, () => {
      assertAccepted(cluster(), f, readExample(f));
    });
  }
}
