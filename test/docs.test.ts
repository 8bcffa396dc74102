import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { withTables } from '../src/fidelity/report.js';

const docs = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');

describe('docs/fidelity.md', () => {
  it('carries the tables generated from the current catalog and presets (npm run docs)', () => {
    const text = readFileSync(join(docs, 'fidelity.md'), 'utf8');
    assert.equal(text, withTables(text));
  });
});
