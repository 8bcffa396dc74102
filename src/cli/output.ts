import { stringify } from 'yaml';

export type Format = 'yaml' | 'json';

export function serialize(value: unknown, format: Format): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringify(value, { lineWidth: 0 });
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
