import { FIELDS, type Field } from './fields.js';
import type { Values } from './values.js';
import { xidMessage } from './xid.js';

/**
 * dcgm-exporter's text exposition: per field `# HELP`, `# TYPE`, then one line per GPU or MIG instance
 * that has a value. Labels come in the exporter's fixed order: `gpu`, `UUID`, `pci_bus_id`, `device`,
 * `modelName`, for MIG `GPU_I_PROFILE` and `GPU_I_ID`, the host label, then its extra labels (the
 * counters file's `label` fields and the pod's attribution) sorted by name.
 *
 * Two renderers, as the exporter has had: up to 4.8.2 a text template printed fields in the counters
 * file's order, integers with `%d` and doubles with `%f` (six decimals), label values as they are; from
 * 4.8.3 Prometheus' own text encoder prints families by name, every value in Go's shortest form (`%g`
 * with exponents from 1e6: an energy counter reads `1.26272101025e+11`) and escapes label values.
 */

/** `legacy`: dcgm-exporter up to 4.8.2; `current`: 4.8.3 and later 4.8.x. */
export type Style = 'legacy' | 'current';

export interface Row {
  /** The fixed-order labels, already in order. */
  identity: readonly (readonly [string, string])[];
  /** The rest, in any order: sorted when rendered. */
  extra: readonly (readonly [string, string])[];
  values: Values;
}

const escapeValue = (v: string): string =>
  v.includes('\\') || v.includes('"') || v.includes('\n')
    ? v.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')
    : v;

/** Go's `strconv.FormatFloat(v, 'g', -1, 64)`, as Prometheus' text encoder prints a sample. */
export function goShortest(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  if (v === 0) return '0';
  // Go picks the exponent form outside [1e-4, 1e6) for the shortest precision; inside it JavaScript's
  // shortest round-trip digits in fixed notation are Go's (most samples: no exponent to work out).
  const a = Math.abs(v);
  if (a >= 1e-4 && a < 1e6) return String(v);
  const [mantissa = '', e = '0'] = v.toExponential().split('e');
  const exp = Number(e);
  return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}

function value(style: Style, f: Field, v: number): string {
  if (style === 'current') return goShortest(f.kind === 'int' ? Math.trunc(v) : v);
  return f.kind === 'double' ? v.toFixed(6) : String(Math.trunc(v));
}

const byName = (a: readonly [string, string], b: readonly [string, string]): number =>
  a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;

/** How much text a piece of the exposition holds, about: enough that a server writes few pieces. */
export const PIECE_BYTES = 64 * 1024;

/** A column of numbers that grows as rows come, without a heap number per value. */
class Column {
  private data = new Float64Array(1024);
  get(i: number): number {
    return this.data[i] ?? 0;
  }
  set(i: number, v: number): void {
    if (i >= this.data.length) {
      const more = new Float64Array(this.data.length * 2);
      more.set(this.data);
      this.data = more;
    }
    this.data[i] = v;
  }
}

/**
 * The series of one scrape, as compact as the text format allows. Prometheus wants each family's series
 * together, so every row must be known before the second family is written; what is kept of a row is its
 * label text (once, not once per field) and its values, about a twelfth of the text it becomes. The text
 * is then made in pieces of about `PIECE_BYTES`, as a server sends it, never the whole of it at once.
 */
export class SeriesTable {
  private readonly labelText: string[] = [];
  /** Where the XID's `err_code` and `err_msg` go in a row's label text; -1: the row's own text below. */
  private readonly xidAt: number[] = [];
  private readonly xidText = new Map<number, string>();
  private readonly columns: Column[];
  /** Which rows have a value, per field: absent is not a number a column can hold. */
  private readonly present: Uint8Array[];
  private readonly escape: (v: string) => string;
  private readonly order: readonly Field[];

  constructor(
    private readonly style: Style,
    private readonly fields: readonly Field[] = FIELDS,
  ) {
    this.escape = style === 'current' ? escapeValue : (v: string) => v;
    this.order = style === 'current' ? [...fields].sort((a, b) => (a.name < b.name ? -1 : 1)) : fields;
    this.columns = fields.map(() => new Column());
    this.present = fields.map(() => new Uint8Array(1024));
  }

  get rows(): number {
    return this.labelText.length;
  }

  private labels(pairs: readonly (readonly [string, string])[]): string {
    return pairs.map(([k, v]) => `${k}="${this.escape(v)}"`).join(',');
  }

  add(r: Row): void {
    const i = this.labelText.length;
    const extra = [...r.extra].sort(byName);
    const before = this.labels(r.identity);
    this.labelText.push(`{${before}${extra.length > 0 ? ',' : ''}${this.labels(extra)}}`);
    // The XID's code and name ride on its own series only, sorted in among the extra labels: where
    // they sort next to each other (always, for the labels the exporter has), one offset says where.
    const err = ['err_code', 'err_msg'] as const;
    const k = extra.filter(([name]) => name <= err[0]).length;
    const between = extra.some(([name]) => name > err[0] && name <= err[1]);
    if (!between) {
      const head = this.labels(extra.slice(0, k));
      this.xidAt.push(1 + before.length + (head.length > 0 ? 1 + head.length : 0));
    } else this.xidAt.push(-1);
    for (const [f, field] of this.fields.entries()) {
      const v = r.values[field.name];
      if (v === undefined) continue;
      let seen = this.present[f] ?? new Uint8Array(0);
      if (i >= seen.length) {
        const more = new Uint8Array(seen.length * 2);
        more.set(seen);
        this.present[f] = seen = more;
      }
      seen[i] = 1;
      this.columns[f]?.set(i, v);
      if (field.name === 'DCGM_FI_DEV_XID_ERRORS' && between) {
        const all = [...r.identity, ...[...extra, ...this.errLabels(v)].sort(byName)];
        this.xidText.set(i, `{${this.labels(all)}}`);
      }
    }
  }

  private errLabels(v: number): [string, string][] {
    return [
      ['err_code', String(v)],
      ['err_msg', xidMessage(v)],
    ];
  }

  private line(field: Field, f: number, i: number): string {
    const v = this.columns[f]?.get(i) ?? 0;
    const plain = this.labelText[i] ?? '';
    if (field.name !== 'DCGM_FI_DEV_XID_ERRORS')
      return `${field.name}${plain} ${value(this.style, field, v)}\n`;
    const at = this.xidAt[i] ?? -1;
    const labels =
      at < 0
        ? (this.xidText.get(i) ?? plain)
        : `${plain.slice(0, at)},${this.labels(this.errLabels(v))}${plain.slice(at)}`;
    return `${field.name}${labels} ${value(this.style, field, v)}\n`;
  }

  /** The exposition in pieces of about `pieceBytes`: per field `# HELP`, `# TYPE`, then its series. */
  *text(pieceBytes = PIECE_BYTES): Generator<string> {
    let piece: string[] = [];
    let size = 0;
    for (const field of this.order) {
      const f = this.fields.indexOf(field);
      const seen = this.present[f] ?? new Uint8Array(0);
      piece.push(`# HELP ${field.name} ${field.help}\n# TYPE ${field.name} ${field.type}\n`);
      for (let i = 0; i < this.labelText.length; i++) {
        if (seen[i] !== 1) continue;
        const l = this.line(field, f, i);
        piece.push(l);
        size += l.length;
        if (size < pieceBytes) continue;
        yield piece.join('');
        piece = [];
        size = 0;
      }
    }
    if (piece.length > 0) yield piece.join('');
  }
}

export function render(rows: readonly Row[], style: Style, fields: readonly Field[] = FIELDS): string {
  const table = new SeriesTable(style, fields);
  for (const r of rows) table.add(r);
  return [...table.text()].join('');
}
