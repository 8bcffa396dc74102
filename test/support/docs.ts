import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The Markdown files a reader is sent to, relative to the repository root: what the docs tests hold to
 * working links and to examples that are files.
 */
export function markdownFiles(root: string): string[] {
  const docs = join(root, 'docs');
  const inDocs = existsSync(docs)
    ? readdirSync(docs)
        .filter((f) => f.endsWith('.md'))
        .map((f) => join('docs', f))
    : [];
  return ['README.md', 'CONTRIBUTING.md', join('bench', 'README.md'), ...inDocs.sort()];
}
