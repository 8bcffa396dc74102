import { stringify } from 'yaml';

export type Format = 'yaml' | 'json';

// An object met twice (attributes a GPU and its VFIO device share) is written twice, never as an alias:
// what kubectl, Helm and people read back must not depend on anchors.
const YAML_OPTIONS = { lineWidth: 0, aliasDuplicateObjects: false } as const;

export function serialize(value: unknown, format: Format): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : toYaml(value);
}

/**
 * What `stringify(value, { lineWidth: 0 })` of the yaml library prints, byte for byte, about 5x faster:
 * the library builds a node for every value and tests every string against every tag, which made YAML
 * output 3x slower than JSON on a large render. Plain data (objects, arrays, strings, numbers, booleans,
 * null) in block style is written here; anything else (a top-level scalar, a string that needs more than
 * one line, an object seen twice) goes to the library whole.
 */
export function toYaml(value: unknown): string {
  if (!isCollection(value) || isEmpty(value)) return stringify(value, YAML_OPTIONS);
  const s: Writer = { out: '', newlines: [], values: new Map(), keys: new Map(), seen: new Set() };
  try {
    emit(value, 0, s);
  } catch (e) {
    if (e instanceof LibraryOnly) return stringify(value, YAML_OPTIONS);
    throw e;
  }
  return `${s.out}\n`;
}

/** Thrown inside `emit` where only the library knows the output. */
class LibraryOnly extends Error {}

interface Writer {
  out: string;
  newlines: string[];
  /** Single-line scalars the library wrote, by value: each string is asked once. */
  values: Map<string | number, string>;
  keys: Map<string, string>;
  seen: Set<object>;
}

type Collection = unknown[] | Record<string, unknown>;

function isCollection(v: unknown): v is Collection {
  if (Array.isArray(v)) return true;
  if (v === null || typeof v !== 'object') return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function isEmpty(v: Collection): boolean {
  if (Array.isArray(v)) return v.length === 0;
  for (const k in v) if (Object.hasOwn(v, k) && v[k] !== undefined) return false;
  return true;
}

/** `\n` and the indentation of each depth, made once. */
function newlineAt(depth: number, s: Writer): string {
  let nl = s.newlines[depth];
  if (nl === undefined) {
    nl = `\n${'  '.repeat(depth)}`;
    s.newlines[depth] = nl;
  }
  return nl;
}

/**
 * A non-empty collection at `depth`, after what precedes its first line. Keys whose value is undefined
 * are left out, as the library does; a hole in an array goes to the library. The text grows by `+=`,
 * which V8 keeps as a rope: joining millions of pieces from an array took as long as writing them.
 */
function emit(v: Collection, depth: number, s: Writer): void {
  if (s.seen.has(v)) throw new LibraryOnly();
  s.seen.add(v);
  const newline = newlineAt(depth, s);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      s.out += i === 0 ? '-' : `${newline}-`;
      item(v[i], depth + 1, true, s);
    }
    return;
  }
  let first = true;
  for (const k of Object.keys(v)) {
    const x = v[k];
    if (x === undefined) continue;
    s.out += first ? key(k, s) : newline + key(k, s);
    first = false;
    item(x, depth + 1, false, s);
  }
}

/** An entry's value: a scalar after a space; a collection on the dash's line or on lines of its own. */
function item(x: unknown, depth: number, inSeq: boolean, s: Writer): void {
  if (!isCollection(x)) s.out += ` ${scalar(x, s)}`;
  else if (isEmpty(x)) s.out += Array.isArray(x) ? ' []' : ' {}';
  else {
    // `- - a` and `- k: v` start on the dash's line.
    s.out += inSeq ? ' ' : newlineAt(depth, s);
    emit(x, depth, s);
  }
}

/**
 * Strings the library writes plain, found without asking it: a letter first (so no indicator, document
 * marker or number), then characters that cannot start a comment or a mapping, no trailing space, and
 * not one of the words that read back as null or a boolean.
 */
const PLAIN = /^[A-Za-z][\w .,;=@+()/-]*$/;
const NOT_STRINGS = new Set(['null', 'Null', 'NULL', 'true', 'True', 'TRUE', 'false', 'False', 'FALSE']);

/**
 * A line that starts like a document marker (the library's test, where U+2028 ends a line too): the
 * library quotes such a key at the top level only, so its writing depends on the depth.
 */
const DOCUMENT_MARKER = /^(%|---|\.\.\.)/m;

const isPlain = (t: string): boolean => PLAIN.test(t) && !t.endsWith(' ') && !NOT_STRINGS.has(t);

function scalar(v: unknown, s: Writer): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number' && Number.isSafeInteger(v) && !Object.is(v, -0)) return String(v);
  if (typeof v === 'string' && isPlain(v)) return v;
  if (typeof v !== 'string' && typeof v !== 'number') throw new LibraryOnly();
  if (typeof v === 'string' && DOCUMENT_MARKER.test(v)) throw new LibraryOnly();
  let text = s.values.get(v);
  if (text === undefined) {
    // As the value of a key: the context every scalar here has (block, not a key).
    text = oneLine(stringify({ k: v }, YAML_OPTIONS), 'k: ', '\n');
    s.values.set(v, text);
  }
  return text;
}

/** A key and its colon; keys repeat, so each is worked out once. */
function key(k: string, s: Writer): string {
  let text = s.keys.get(k);
  if (text === undefined) {
    text = `${keyText(k)}:`;
    s.keys.set(k, text);
  }
  return text;
}

function keyText(k: string): string {
  // Over 1024 characters the library writes an explicit key (`? k`).
  if (isPlain(k) && k.length <= 1024) return k;
  if (DOCUMENT_MARKER.test(k)) throw new LibraryOnly();
  return oneLine(stringify({ [k]: null }, YAML_OPTIONS), '', ': null\n');
}

/** The scalar between `prefix` and `suffix` of the library's one-line output; else the library does all. */
function oneLine(text: string, prefix: string, suffix: string): string {
  const inner = text.slice(prefix.length, text.length - suffix.length);
  const ok =
    text.startsWith(prefix) &&
    text.endsWith(suffix) &&
    !inner.includes('\n') &&
    !inner.startsWith('? ') &&
    text.length >= prefix.length + suffix.length;
  if (!ok) throw new LibraryOnly();
  return inner;
}

/** Left-aligned columns, like kubectl's tables. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

/**
 * Thrown by a command whose output is its answer but not a success, as `diff` finding differences: main
 * prints what was written and exits with `status`.
 */
export class OutputWithStatus extends Error {
  constructor(readonly status: number) {
    super(`exit status ${status}`);
  }
}
