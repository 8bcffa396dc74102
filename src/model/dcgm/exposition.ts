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

/**
 * The exposition one family at a time: a scrape of 8,000 GPUs is 40 MiB of text, which a server sends
 * as it is made, giving the event loop back between families, instead of holding it all at once.
 */
export function* families(
  rows: readonly Row[],
  style: Style,
  fields: readonly Field[] = FIELDS,
): Generator<string> {
  const escape = style === 'current' ? escapeValue : (v: string) => v;
  const labels = (pairs: readonly (readonly [string, string])[]): string =>
    pairs.map(([k, v]) => `${k}="${escape(v)}"`).join(',');
  const order = style === 'current' ? [...fields].sort((a, b) => (a.name < b.name ? -1 : 1)) : fields;
  // Each row's label text once per scrape, not once per field: 8,000 GPUs × 25 fields stay cheap.
  const text = rows.map((r) => {
    const extra = [...r.extra].sort(byName);
    return { plain: `{${labels([...r.identity, ...extra])}}`, extra, r };
  });
  for (const f of order) {
    const out = [`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`];
    for (const { plain, extra, r } of text) {
      const v = r.values[f.name];
      if (v === undefined) continue;
      if (f.name === 'DCGM_FI_DEV_XID_ERRORS') {
        // The XID's code and name ride on its own series only, sorted in among the extra labels.
        const err: [string, string][] = [
          ['err_code', String(v)],
          ['err_msg', xidMessage(v)],
        ];
        out.push(
          `${f.name}{${labels([...r.identity, ...[...extra, ...err].sort(byName)])}} ${value(style, f, v)}`,
        );
      } else out.push(`${f.name}${plain} ${value(style, f, v)}`);
    }
    out.push('');
    yield out.join('\n');
  }
}

export function render(rows: readonly Row[], style: Style, fields: readonly Field[] = FIELDS): string {
  return [...families(rows, style, fields)].join('');
}
