import type {
  Device,
  DeviceAttribute,
  DeviceCounterConsumption,
  DeviceTaint,
  ResourceSlice,
} from '../../kube/types/resource.js';

/**
 * Device by device and attribute by attribute, what a captured node's ResourceSlices and fakegpu's
 * render of the same node disagree on. Slices are compared as the scheduler sees them: devices and
 * counter sets by driver and name, whichever slice of the pool holds them; then how many slices each
 * pool has, since that is part of the layout NVIDIA's driver publishes.
 */

export interface Difference {
  /** `<driver> <device>`, `<driver> counterSet <name>` or `<driver> pool`. */
  where: string;
  /** `device`, `attribute <name>`, `capacity <name>`, `consumesCounters`, `taints`, `counter <name>`, … */
  field: string;
  /** The value as text; null where that side lacks it. */
  capture: string | null;
  fakegpu: string | null;
}

export interface DiffResult {
  /** Differences that count. */
  differences: Difference[];
  /** Differences in fields the caller said the capture cannot know (e.g. UUIDs of an anonymized profile). */
  ignored: Difference[];
  /** Devices compared, per side. */
  devices: { capture: number; fakegpu: number };
}

export function attributeText(a: DeviceAttribute): string {
  if ('string' in a) return `string ${JSON.stringify(a.string)}`;
  if ('int' in a) return `int ${a.int}`;
  if ('bool' in a) return `bool ${a.bool}`;
  if ('ints' in a) return `ints [${a.ints.join(', ')}]`;
  return `version ${JSON.stringify(a.version)}`;
}

const consumptionText = (c: readonly DeviceCounterConsumption[] | undefined): string | null =>
  c === undefined || c.length === 0
    ? null
    : c
        .map(
          (x) =>
            `${x.counterSet}{${Object.entries(x.counters)
              .map(([k, v]) => `${k}=${v.value}`)
              .join(',')}}`,
        )
        .join(' ');

/** timeAdded is when a taint was put on, which no render can reproduce. */
const taintsText = (t: readonly DeviceTaint[] | undefined): string | null =>
  t === undefined || t.length === 0
    ? null
    : t.map((x) => `${x.key}${x.value === undefined ? '' : `=${x.value}`}:${x.effect}`).join(' ');

/** `gpu.nvidia.com/uuid` and `uuid` are both matched by `uuid`. */
function shortName(qualified: string): string {
  const slash = qualified.lastIndexOf('/');
  return slash < 0 ? qualified : qualified.slice(slash + 1);
}

interface Indexed {
  devices: Map<string, Device>;
  counterSets: Map<string, Record<string, string>>;
  slices: Map<string, number>;
  /**
   * How often each device and counter set key occurs: a pool that publishes one name twice is one the
   * scheduler refuses, never a match for a pool that has it once.
   */
  copies: Map<string, number>;
}

function index(slices: readonly ResourceSlice[]): Indexed {
  const out: Indexed = { devices: new Map(), counterSets: new Map(), slices: new Map(), copies: new Map() };
  const count = (key: string): string => {
    out.copies.set(key, (out.copies.get(key) ?? 0) + 1);
    return key;
  };
  for (const s of slices) {
    const { driver } = s.spec;
    out.slices.set(driver, (out.slices.get(driver) ?? 0) + 1);
    for (const d of s.spec.devices ?? []) out.devices.set(count(`${driver} ${d.name}`), d);
    for (const c of s.spec.sharedCounters ?? [])
      out.counterSets.set(
        count(`${driver} counterSet ${c.name}`),
        Object.fromEntries(Object.entries(c.counters).map(([k, v]) => [k, v.value])),
      );
  }
  return out;
}

/** Keys published more than once on either side, as differences in how many times. */
function copiesDiffer(c: Indexed, f: Indexed, out: Difference[]): void {
  for (const key of union(c.copies, f.copies)) {
    const cn = c.copies.get(key) ?? 0;
    const fn = f.copies.get(key) ?? 0;
    if ((cn > 1 || fn > 1) && cn !== fn)
      out.push({ where: key, field: 'copies', capture: String(cn), fakegpu: String(fn) });
  }
}

const total = (copies: ReadonlyMap<string, number>, keys: ReadonlyMap<string, unknown>): number =>
  [...keys.keys()].reduce((n, k) => n + (copies.get(k) ?? 0), 0);

/** Keys of both sides in the capture's order, then what only fakegpu has. */
function union<T>(a: ReadonlyMap<string, T>, b: ReadonlyMap<string, T>): string[] {
  return [...new Set([...a.keys(), ...b.keys()])];
}

function compareRecords(
  where: string,
  kind: string,
  capture: Record<string, string>,
  fakegpu: Record<string, string>,
  out: Difference[],
): void {
  for (const k of [...new Set([...Object.keys(capture), ...Object.keys(fakegpu)])]) {
    const c = capture[k] ?? null;
    const f = fakegpu[k] ?? null;
    if (c !== f) out.push({ where, field: `${kind} ${k}`, capture: c, fakegpu: f });
  }
}

function compareDevice(where: string, c: Device, f: Device, out: Difference[]): void {
  const attrs = (d: Device): Record<string, string> =>
    Object.fromEntries(Object.entries(d.attributes ?? {}).map(([k, v]) => [k, attributeText(v)]));
  const caps = (d: Device): Record<string, string> =>
    Object.fromEntries(Object.entries(d.capacity ?? {}).map(([k, v]) => [k, v.value]));
  compareRecords(where, 'attribute', attrs(c), attrs(f), out);
  compareRecords(where, 'capacity', caps(c), caps(f), out);
  const cc = consumptionText(c.consumesCounters);
  const fc = consumptionText(f.consumesCounters);
  if (cc !== fc) out.push({ where, field: 'consumesCounters', capture: cc, fakegpu: fc });
  const ct = taintsText(c.taints);
  const ft = taintsText(f.taints);
  if (ct !== ft) out.push({ where, field: 'taints', capture: ct, fakegpu: ft });
}

/**
 * `ignore` names attributes or capacities (qualified or short, e.g. `uuid`) whose differences are listed
 * apart and do not count.
 */
export function diffSlices(
  capture: readonly ResourceSlice[],
  fakegpu: readonly ResourceSlice[],
  ignore: ReadonlySet<string> = new Set(),
): DiffResult {
  const c = index(capture);
  const f = index(fakegpu);
  const all: Difference[] = [];
  /** Both sides' entries by key: compared where both have one, else the one side named. */
  const keyed = <T>(
    a: ReadonlyMap<string, T>,
    b: ReadonlyMap<string, T>,
    field: string,
    both: (k: string, x: T, y: T) => void,
  ): void => {
    for (const key of union(a, b)) {
      const x = a.get(key);
      const y = b.get(key);
      if (x !== undefined && y !== undefined) both(key, x, y);
      else all.push({ where: key, field, capture: x ? 'present' : null, fakegpu: y ? 'present' : null });
    }
  };
  keyed(c.devices, f.devices, 'device', (key, x, y) => {
    compareDevice(key, x, y, all);
  });
  keyed(c.counterSets, f.counterSets, 'counterSet', (key, x, y) => {
    compareRecords(key, 'counter', x, y, all);
  });
  copiesDiffer(c, f, all);
  for (const driver of union(c.slices, f.slices)) {
    const cn = c.slices.get(driver);
    const fn = f.slices.get(driver);
    if (cn !== fn)
      all.push({
        where: `${driver} pool`,
        field: 'slices',
        capture: cn === undefined ? null : String(cn),
        fakegpu: fn === undefined ? null : String(fn),
      });
  }
  const ignored = (d: Difference): boolean => {
    const m = /^(?:attribute|capacity) (.+)$/.exec(d.field);
    return m?.[1] !== undefined && (ignore.has(m[1]) || ignore.has(shortName(m[1])));
  };
  return {
    differences: all.filter((d) => !ignored(d)),
    ignored: all.filter(ignored),
    devices: { capture: total(c.copies, c.devices), fakegpu: total(f.copies, f.devices) },
  };
}

const show = (v: string | null): string => v ?? '(absent)';

/** One line per difference, then what was left aside; empty differences say so. */
export function renderDiff(r: DiffResult, names: { capture: string; fakegpu: string }): string {
  const lines: string[] = [];
  for (const d of r.differences)
    lines.push(
      `${d.where}: ${d.field}: ${names.capture} ${show(d.capture)}, ${names.fakegpu} ${show(d.fakegpu)}`,
    );
  if (r.ignored.length > 0) {
    const fields = new Map<string, number>();
    for (const d of r.ignored) fields.set(d.field, (fields.get(d.field) ?? 0) + 1);
    lines.push(
      `not compared (the capture cannot know them): ${[...fields].map(([k, n]) => `${k} (${n} device${n === 1 ? '' : 's'})`).join(', ')}`,
    );
  }
  const summary =
    r.differences.length === 0
      ? `identical: ${r.devices.capture} device(s)`
      : `${r.differences.length} difference(s) over ${r.devices.capture} captured and ${r.devices.fakegpu} rendered device(s)`;
  lines.push(summary);
  return `${lines.join('\n')}\n`;
}
