import type { z } from 'zod';

/**
 * Every user-facing failure names the field, the value and what is allowed, so one line on stderr is
 * enough to fix the input. The CLI prints `message` and exits non-zero; nothing reaches stdout.
 */
export class FakegpuError extends Error {
  constructor(
    /** Dotted path of the offending input, e.g. `spec.gpus[2].busId` or `--driver-version`. */
    readonly field: string,
    readonly detail: string,
  ) {
    // An empty field (an empty path as `validate ""` gets it) would read as a line starting with ": ".
    super(`${field === '' ? '""' : field}: ${detail}`);
    this.name = 'FakegpuError';
  }
}

/** How much of a value an error line quotes: enough to recognise it, never megabytes of input. */
const SHOWN = 80;

/**
 * Quote a user value for an error message; JSON keeps strings, numbers and objects unambiguous. A long
 * value is cut, with an ellipsis and its full length, so the message stays one readable line.
 */
export function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string' && value.length > SHOWN) {
    return `${JSON.stringify(value.slice(0, SHOWN))}… (${value.length} characters)`;
  }
  // JSON has no NaN or Infinity and would print them as null, which is not what the input said (YAML's
  // `.nan` and `.inf` are numbers).
  if ((typeof value === 'number' && !Number.isFinite(value)) || typeof value === 'bigint')
    return String(value);
  const text = JSON.stringify(value, (_k, v: unknown) =>
    (typeof v === 'number' && !Number.isFinite(v)) || typeof v === 'bigint' ? String(v) : v,
  );
  return text.length > SHOWN ? `${text.slice(0, SHOWN)}… (${text.length} characters of JSON)` : text;
}

/**
 * Text from elsewhere (a library's message, a map key) cut like `show` cuts values, without quoting; only
 * its first line, as libraries append excerpts of the input below.
 */
export function clip(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > SHOWN || line.length < text.length ? `${line.slice(0, SHOWN)}…` : line;
}

export function oneOf(values: readonly string[]): string {
  return values.join(', ');
}

function pathText(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, p) => {
    if (typeof p === 'number') return `${acc}[${p}]`;
    // A map key can be megabytes of input.
    const key = clip(String(p));
    return acc ? `${acc}.${key}` : key;
  }, '');
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur = root;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

/**
 * The first schema issue as one line naming the field, the value found and what is allowed; `whole`
 * names the input when the issue is with all of it.
 */
export function schemaError(
  error: z.ZodError,
  input: unknown,
  prefix: string,
  whole = 'profile',
): FakegpuError {
  const [first] = error.issues;
  if (!first) return new FakegpuError(prefix || whole, 'invalid');
  const field = [prefix, pathText(first.path)].filter(Boolean).join('.');
  const got = first.code === 'unrecognized_keys' ? '' : ` (got ${show(valueAt(input, first.path))})`;
  const more = error.issues.length > 1 ? ` [and ${error.issues.length - 1} more problem(s)]` : '';
  return new FakegpuError(field || whole, `${first.message}${got}${more}`);
}
