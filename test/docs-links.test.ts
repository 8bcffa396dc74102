import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../src/process/repo.js';
import { markdownFiles } from './support/docs.js';

/** The README's length limit: what fakegpu is and how to start, the rest in docs/. */
const README_MAX_LINES = 200;

/** Markdown without fenced code blocks and code spans, whose brackets are not links. */
function withoutCode(text: string): string {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (open?.[1] !== undefined && open[1].startsWith(fence)) fence = undefined;
      lines.push('');
    } else if (open?.[1] !== undefined) {
      fence = open[1];
      lines.push('');
    } else {
      lines.push(line.replace(/(`+)[^`]*?\1/g, ''));
    }
  }
  return lines.join('\n');
}

/** GitHub's anchors for a file's headings: lower case, punctuation dropped, spaces as '-', repeats numbered. */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (open?.[1] !== undefined) {
      if (fence === undefined) fence = open[1];
      else if (open[1].startsWith(fence)) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading?.[1] === undefined) continue;
    const base = heading[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Link targets of a Markdown text: inline links and images, and reference definitions. */
export function linkTargets(text: string): string[] {
  const body = withoutCode(text);
  const targets: string[] = [];
  for (const m of body.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
    if (m[1] !== undefined) targets.push(m[1].replace(/^<|>$/g, ''));
  }
  for (const m of body.matchAll(/^\s{0,3}\[[^\]]+\]:\s*(\S+)/gm)) {
    if (m[1] !== undefined) targets.push(m[1].replace(/^<|>$/g, ''));
  }
  return targets;
}

/**
 * The relative links of `file` (a path under `root`) that point at no file, or at a heading its
 * Markdown target does not have, each as "file: target". Links with a scheme (https:, mailto:) are left alone.
 */
export function brokenLinks(root: string, file: string): string[] {
  const path = join(root, file);
  const text = readFileSync(path, 'utf8');
  const broken: string[] = [];
  for (const target of linkTargets(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [rawPath = '', anchor] = target.split('#', 2);
    const linked = rawPath === '' ? path : resolve(dirname(path), decodeURIComponent(rawPath));
    if (!existsSync(linked)) {
      broken.push(`${file}: ${target} (no such file)`);
      continue;
    }
    if (anchor !== undefined && anchor !== '' && linked.endsWith('.md')) {
      const anchors = headingAnchors(readFileSync(linked, 'utf8'));
      if (!anchors.has(decodeURIComponent(anchor).toLowerCase())) {
        broken.push(`${file}: ${target} (no heading #${anchor} in ${relative(root, linked)})`);
      }
    }
  }
  return broken;
}

describe('Markdown links', () => {
  for (const file of markdownFiles(REPO_ROOT)) {
    it(`${file}: every relative link points at a file (and heading) that exists`, () => {
      assert.ok(existsSync(join(REPO_ROOT, file)), `${file} is missing`);
      assert.deepEqual(brokenLinks(REPO_ROOT, file), []);
    });
  }

  it(`README.md has at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length;
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines, more than ${README_MAX_LINES}`);
  });

  it('finds a link to a missing file or heading, and passes good ones, code and URLs', () => {
    const root = mkdtempSync(join(tmpdir(), 'fakegpu-docs-links-'));
    try {
      mkdirSync(join(root, 'docs'));
      writeFileSync(join(root, 'docs', 'a.md'), '# A page\n\n## Two words, and more\n');
      writeFileSync(
        join(root, 'README.md'),
        [
          '# Title',
          '',
          'Good: [a](docs/a.md), [b](docs/a.md#two-words-and-more), [c](#title), [d](https://example.com/x.md),',
          '[e](<docs/a.md> "A"), [f](docs/).',
          'Bad: [g](docs/missing.md), [h](docs/a.md#no-such-heading), [i](#nowhere).',
          '`[not a link](nope.md)`',
          '',
          '```md',
          '[in a fence](fenced.md)',
          '```',
          '',
          '[ref]: ./docs/gone.md',
          '',
        ].join('\n'),
      );
      assert.deepEqual(brokenLinks(root, 'README.md'), [
        'README.md: docs/missing.md (no such file)',
        'README.md: docs/a.md#no-such-heading (no heading #no-such-heading in docs/a.md)',
        'README.md: #nowhere (no heading #nowhere in README.md)',
        'README.md: ./docs/gone.md (no such file)',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('anchors follow GitHub: punctuation dropped, repeated headings numbered', () => {
    assert.deepEqual(
      [...headingAnchors('# Prepare (`bench:prepare`)\n## NICs and GPU–NIC alignment\n## A\n## A\n')],
      ['prepare-benchprepare', 'nics-and-gpunic-alignment', 'a', 'a-1'],
    );
  });
});
