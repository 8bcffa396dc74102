import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { REPO_ROOT } from '../src/process/repo.js';

const SRC = join(REPO_ROOT, 'src');

/**
 * The regions of src/, lowest first: a file may import its own region and the ones below it, never one
 * above. `kube/types` (the API objects' shapes) sits under the model so the model can name them without
 * reaching the client code in the rest of `kube/`.
 */
export const LAYERS = [
  'errors',
  'kube/types',
  'model',
  'kube',
  'process',
  'controllers',
  'node',
  'fleet',
  'tools',
  'local-cluster',
  'cli',
] as const;

/** The region of a path under src/ (`kube/types/resource.ts` → `kube/types`). */
export function regionOf(path: string): string {
  const parts = path.split('/');
  if (parts[0] === 'kube' && parts[1] === 'types') return 'kube/types';
  return (parts[0] ?? '').replace(/\.ts$/, '');
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
}

/** Relative module specifiers of every import, export-from and dynamic import in a file. */
export function relativeImports(sf: ts.SourceFile): string[] {
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier) {
      if (ts.isStringLiteral(n.moduleSpecifier)) out.push(n.moduleSpecifier.text);
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const a = n.arguments[0];
      if (a && ts.isStringLiteral(a)) out.push(a.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out.filter((s) => s.startsWith('.'));
}

/** Every named function, method or function-valued variable longer than `max` lines: `file:name` → lines. */
export function longFunctions(sf: ts.SourceFile, max: number): Map<string, number> {
  const out = new Map<string, number>();
  const file = relative(SRC, sf.fileName);
  const lines = (n: ts.Node) =>
    sf.getLineAndCharacterOfPosition(n.getEnd()).line -
    sf.getLineAndCharacterOfPosition(n.getStart(sf)).line +
    1;
  const visit = (n: ts.Node, owner: string): void => {
    let name = owner;
    if (ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n)) name = n.name?.getText(sf) ?? owner;
    else if (ts.isVariableDeclaration(n) && n.initializer && ts.isFunctionLike(n.initializer))
      name = n.name.getText(sf);
    if (ts.isFunctionLike(n) && 'body' in n && n.body) {
      const count = lines(n);
      const key = `${file}:${name || '(anonymous)'}`;
      if (count > max) out.set(key, Math.max(count, out.get(key) ?? 0));
    }
    ts.forEachChild(n, (c) => {
      visit(c, name);
    });
  };
  visit(sf, '');
  return out;
}

describe('the shape of src/', () => {
  const files = sourceFiles(SRC);

  it('shows its regions at the top, each with a README, at most 14 entries', () => {
    const entries = readdirSync(SRC);
    assert.ok(entries.length <= 14, `src/ has ${entries.length} entries: ${entries.join(' ')}`);
    for (const e of entries) {
      if (!statSync(join(SRC, e)).isDirectory()) continue;
      assert.ok(existsSync(join(SRC, e, 'README.md')), `src/${e} has no README.md`);
    }
    for (const e of entries.filter((x) => x.endsWith('.ts')))
      assert.ok(LAYERS.includes(regionOf(e) as (typeof LAYERS)[number]), `src/${e} is in no region`);
  });

  it('imports point down the regions, never up', () => {
    const rank = (r: string) => LAYERS.indexOf(r as (typeof LAYERS)[number]);
    const upward: string[] = [];
    for (const f of files) {
      const from = regionOf(relative(SRC, f));
      assert.ok(rank(from) >= 0, `${relative(SRC, f)} is in no region`);
      for (const spec of relativeImports(parse(f))) {
        const target = relative(SRC, resolve(dirname(f), spec));
        if (target.startsWith('..')) {
          upward.push(`${relative(SRC, f)} imports ${spec}, outside src/`);
          continue;
        }
        const to = regionOf(target);
        if (rank(to) > rank(from)) upward.push(`${relative(SRC, f)} (${from}) imports ${spec} (${to})`);
      }
    }
    assert.deepEqual(upward, []);
  });

  it('has no function over 100 lines', () => {
    const long = files.flatMap((f) => [...longFunctions(parse(f), 100)].map(([k, v]) => `${k}: ${v} lines`));
    assert.deepEqual(long, []);
  });

  it('measures a long function, so the bound can fail', () => {
    const body = Array.from({ length: 101 }, (_, i) => `  const a${i} = ${i};`).join('\n');
    const sf = ts.createSourceFile(
      join(SRC, 'x.ts'),
      `function long() {\n${body}\n}\n`,
      ts.ScriptTarget.Latest,
      true,
    );
    assert.deepEqual([...longFunctions(sf, 100)], [['x.ts:long', 103]]);
    const up = ts.createSourceFile(
      'y.ts',
      "import { a } from '../cli/main.js';\n",
      ts.ScriptTarget.Latest,
      true,
    );
    assert.deepEqual(relativeImports(up), ['../cli/main.js']);
  });
});
