import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The `fakegpu …` commands the docs show in fenced blocks, as a reader would copy them: a script block
 * (`sh`) is one command a line, run in order; a session block shows `$ command` lines each followed by
 * the output the doc promises.
 */
export interface DocCommand {
  /** `docs/x.md:12`: where the command is shown. */
  where: string;
  /** The command line, comments and continuation lines folded. */
  command: string;
  /** The block it is in: commands of one block share a folder, in order. */
  block: string;
  /** The output the doc shows under it; absent in a script block. */
  output?: string;
}

/** README.md and every docs/*.md, the files whose examples users copy. */
export function docFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** Languages whose fenced blocks are data (shown by `<!-- example: -->` markers), not commands. */
const DATA = new Set(['yaml', 'yml', 'json', 'go', 'ts', 'typescript', 'promql', 'mermaid']);

/** `cmd # comment` → `cmd`: a `#` after a blank, outside quotes, starts a comment, as in sh. */
export function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote !== null) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1] ?? ''))) return line.slice(0, i).trimEnd();
  }
  return line.trimEnd();
}

function blockCommands(doc: string, start: number, lines: readonly string[]): DocCommand[] {
  const block = `${doc}:${start}`;
  const out: DocCommand[] = [];
  if (lines.some((l) => l.startsWith('$ '))) {
    let current: DocCommand | undefined;
    const output: string[] = [];
    const close = () => {
      if (current) out.push({ ...current, output: output.join('\n') });
      output.length = 0;
    };
    lines.forEach((l, i) => {
      if (l.startsWith('$ ')) {
        close();
        current = { where: `${doc}:${start + i + 1}`, command: l.slice(2).trim(), block };
      } else if (current) output.push(l);
    });
    close();
    return out;
  }
  let pending: { text: string; line: number } | null = null;
  lines.forEach((raw, i) => {
    const line = stripComment(raw).trim();
    if (line === '') return;
    const text = pending ? `${pending.text} ${line}` : line;
    const at = pending?.line ?? i;
    if (line.endsWith('\\')) {
      pending = { text: text.slice(0, -1).trimEnd(), line: at };
      return;
    }
    out.push({ where: `${doc}:${start + at + 1}`, command: text, block });
    pending = null;
  });
  return out;
}

/** Every command of every fenced block of the doc that mentions fakegpu. */
export function docCommands(root: string, doc: string): DocCommand[] {
  const lines = readFileSync(join(root, doc), 'utf8').split('\n');
  const out: DocCommand[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) break;
    if (!DATA.has(open[1] ?? '')) out.push(...blockCommands(doc, i + 1, lines.slice(i + 1, end)));
    i = end;
  }
  return out.filter((c) => /(^|[\s"'(;&|])fakegpu\s/.test(`${c.command} `));
}

/** Commands that need a cluster, an image build or a node: shown, not run. */
const NEEDS_CLUSTER = new Set([
  'cluster',
  'plugin',
  'fleet',
  'fault',
  'report',
  'image',
  'compute-domain-controller',
  'uninstall-check',
  'demo',
]);
/** Commands that run offline, from files: every example of them is run. */
const OFFLINE = new Set([
  'profiles',
  'render',
  'validate',
  'topo',
  'diff',
  'export',
  'help',
  '--help',
  '--version',
]);
/** Other programs a line may call: a line with one of them needs a cluster or a node. A line that
 * does not run fakegpu itself (`helm install fakegpu …`) is shown only. */
const FOREIGN = /(^|[\s;&|(])(kubectl|helm|curl|ctr|sudo|docker|ssh)\s/;

/**
 * Whether the command runs offline (`run`), needs a cluster (`cluster`), or names a fakegpu command this
 * table does not know (`unknown: <name>`): a new command must be sorted into one of the two.
 */
export function kindOf(command: string): 'run' | 'cluster' | `unknown: ${string}` {
  // fakegpu where a shell runs it: first on the line, after a pipe or `$(`, or through npx or npm run.
  const uses = [
    ...command.matchAll(/(?:^|[;&|(]\s*|\b(?:npx|run|-E)\s+)fakegpu\s+(?:--\s+)?(\S+)(?:\s+(\S+))?/g),
  ];
  if (uses.length === 0) return 'cluster';
  let kind: 'run' | 'cluster' = FOREIGN.test(command) ? 'cluster' : 'run';
  for (const [, sub = '', next = ''] of uses) {
    if (sub === 'capture') {
      if (next === 'cluster' && !command.includes('--slices')) kind = 'cluster';
      else if (!['script', 'node', 'cluster'].includes(next)) return `unknown: capture ${next}`;
    } else if (NEEDS_CLUSTER.has(sub)) kind = 'cluster';
    else if (!OFFLINE.has(sub)) return `unknown: ${sub}`;
  }
  return kind;
}

/** `a [--x] b` → `a b` and `a --x b`: an optional flag shown in brackets, run without and with it. */
export function variants(command: string): string[] {
  const m = /\s\[(-[^\]\s][^\]]*)\]/.exec(command);
  if (!m) return [command];
  const without = command.slice(0, m.index) + command.slice(m.index + m[0].length);
  const within = `${command.slice(0, m.index)} ${m[1] ?? ''}${command.slice(m.index + m[0].length)}`;
  return [...variants(without), ...variants(within)];
}

/**
 * Whether the output matches what the doc shows: line for line, where a line `…` stands for any number
 * of lines and a `…` within a line for any text.
 */
export function outputMatches(shown: string, actual: string): boolean {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = shown
    .trimEnd()
    .split('\n')
    .map((l) => (l.trim() === '…' ? '(?:[^\\n]*\\n)*?' : `${l.split('…').map(esc).join('[^\\n]*?')}\\n`))
    .join('');
  return new RegExp(`^${pattern}$`).test(`${actual.trimEnd()}\n`);
}
