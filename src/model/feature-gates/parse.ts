/**
 * `--feature-gates A=true,B=false` read as NVIDIA's driver reads it (component-base's `Set` and
 * `SetFromMap`, then `ValidateFeatureGates`), each refusal in their words, with what fakegpu adds: the
 * release that lacks a gate, and the gates it reproduces only at their default.
 */

import { FakegpuError, oneOf } from '../../errors.js';
import type { DriverRelease } from '../device/release.js';
import {
  brokenRule,
  defaultGates,
  GATES,
  gatesOf,
  LOGGING_GATES,
  ruleMessage,
  type FeatureGates,
  type GateName,
} from './gates.js';

/** Go's strconv.ParseBool. */
const BOOLS: Record<string, boolean> = {
  '1': true,
  t: true,
  T: true,
  true: true,
  TRUE: true,
  True: true,
  '0': false,
  f: false,
  F: false,
  false: false,
  FALSE: false,
  False: false,
};

/** component-base's meta gates: every Alpha (Beta) gate not named explicitly takes their value. */
const META = { AllAlpha: 'Alpha', AllBeta: 'Beta' } as const;

/** The pairs as component-base's `Set` splits them: empty items skipped, key and value trimmed. */
function pairs(text: string, field: string): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const item of text.split(',')) {
    if (item.length === 0) continue;
    const eq = item.indexOf('=');
    const k = (eq < 0 ? item : item.slice(0, eq)).trim();
    if (eq < 0) throw new FakegpuError(field, `missing bool value for ${k}`);
    const v = item.slice(eq + 1).trim();
    const b = BOOLS[v];
    if (b === undefined)
      throw new FakegpuError(
        field,
        `invalid value of ${k}=${v}, err: strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`,
      );
    out.set(k, b);
  }
  return out;
}

function unrecognized(k: string, release: DriverRelease, field: string): FakegpuError {
  const gate = (GATES as Record<string, (typeof GATES)[GateName] | undefined>)[k];
  const why = gate
    ? `NVIDIA DRA driver release ${release} does not have it; it came in ${gate.releases[0] ?? '?'}`
    : `release ${release} has ${oneOf(gatesOf(release))}`;
  return new FakegpuError(field, `unrecognized feature gate: ${k} (${why})`);
}

/**
 * The gates a release runs with: its defaults, then the flag's pairs, then NVIDIA's rules. Pure; the
 * caller names the field (`--feature-gates`, `FEATURE_GATES`, a chart value).
 */
export function parseFeatureGates(text: string, release: DriverRelease, field: string): FeatureGates {
  const asked = pairs(text, field);
  const known = new Set<string>(gatesOf(release));
  const gates = defaultGates();
  for (const [k, v] of asked) {
    if (k in META) {
      const stage = META[k as keyof typeof META];
      for (const g of gatesOf(release)) if (GATES[g].stage === stage && !asked.has(g)) gates[g] = v;
    } else if (known.has(k)) {
      gates[k as GateName] = v;
    } else if (!(LOGGING_GATES as readonly string[]).includes(k)) {
      throw unrecognized(k, release, field);
    }
  }
  checkFeatureGates(gates, release, field);
  return gates;
}

/** NVIDIA's `ValidateFeatureGates`, then what fakegpu cannot reproduce, refused by name. */
export function checkFeatureGates(gates: FeatureGates, release: DriverRelease, field: string): void {
  const rule = brokenRule(gates, release);
  if (rule) throw new FakegpuError(field, ruleMessage(rule));
  for (const g of gatesOf(release)) {
    const m = GATES[g].fakegpu;
    if (m.kind === 'default-only' && gates[g] !== GATES[g].default)
      throw new FakegpuError(
        field,
        `feature gate ${g}=${String(gates[g])}: ${m.why}; fakegpu takes only ${g}=${String(GATES[g].default)}, NVIDIA's default`,
      );
  }
}

/** The gates as the flag spells them, only those away from their default, in table order. */
export function formatFeatureGates(gates: FeatureGates): string {
  return (Object.keys(GATES) as GateName[])
    .filter((g) => gates[g] !== GATES[g].default)
    .map((g) => `${g}=${String(gates[g])}`)
    .join(',');
}

/**
 * The gates a release runs with, `--dynamic-mig` folded in as NVIDIA's DynamicMIG (the flag predates
 * fakegpu's gates), then NVIDIA's rules checked once more over the result.
 */
export function resolveGates(
  text: string,
  release: DriverRelease,
  dynamicMig: boolean,
  field: string,
): FeatureGates {
  const gates = parseFeatureGates(text, release, field);
  if (!dynamicMig || gates.DynamicMIG) return gates;
  const withMig = { ...gates, DynamicMIG: true };
  checkFeatureGates(withMig, release, `${field} with --dynamic-mig`);
  return withMig;
}
