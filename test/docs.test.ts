import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { withTables } from '../src/tools/fidelity/report.js';
import { REPO_ROOT } from '../src/process/repo.js';

const docs = join(REPO_ROOT, 'docs');

describe('docs/fidelity.md', () => {
  it('carries the tables generated from the current catalog and presets (npm run docs)', () => {
    const text = readFileSync(join(docs, 'fidelity.md'), 'utf8');
    assert.equal(text, withTables(text));
  });
});
