import { LIMITS, type ResourceSlice } from '../../src/kube/types/resource.js';
import { DNS_LABEL } from '../../src/kube/types/names.js';

const C_IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;
const QUANTITY = /^[0-9]+(Ki|Mi|Gi|Ti|Pi|Ei)?$/;

function qualifiedName(k: string): boolean {
  const [a, b] = k.split('/');
  if (b === undefined) return a !== undefined && C_IDENT.test(a) && a.length <= 32;
  return a !== undefined && a.length <= 63 && C_IDENT.test(b) && b.length <= 32;
}

/**
 * The `resource.k8s.io/v1` validation rules of Kubernetes 1.35+ that a driver can break, checked over a
 * node's pool. Returns every violation; an empty list means the API server would accept the slices.
 * (The real API server checks these too, in the cluster tests.)
 */
export function apiViolations(slices: readonly ResourceSlice[]): string[] {
  const errs: string[] = [];
  const names = new Set<string>();
  const sets = new Map<string, Set<string>>();
  const pools = new Set(
    slices.map((s) => `${s.spec.pool.name}/${s.spec.pool.generation}/${s.spec.pool.resourceSliceCount}`),
  );
  if (pools.size !== 1) errs.push(`slices disagree on pool name/generation/count: ${[...pools].join(' ')}`);
  for (const [i, s] of slices.entries()) {
    const where = `slice ${i}`;
    const devs = s.spec.devices ?? [];
    const counters = s.spec.sharedCounters ?? [];
    if (devs.length > 0 && counters.length > 0)
      errs.push(`${where}: devices and sharedCounters in one slice`);
    const usesCounters = devs.some((d) => d.consumesCounters);
    const max = usesCounters ? LIMITS.devicesPerSliceWithTaintsOrCounters : LIMITS.devicesPerSlice;
    if (devs.length > max) errs.push(`${where}: ${devs.length} devices > ${max}`);
    if (counters.length > LIMITS.counterSetsPerSlice)
      errs.push(`${where}: ${counters.length} counter sets > 8`);
    for (const c of counters) {
      if (!DNS_LABEL.test(c.name)) errs.push(`${where}: counter set name ${c.name}`);
      const keys = Object.keys(c.counters);
      if (keys.length < 1 || keys.length > LIMITS.countersPerSet)
        errs.push(`${where}: ${c.name} has ${keys.length} counters`);
      for (const k of keys) if (!DNS_LABEL.test(k)) errs.push(`${where}: counter name ${k}`);
      if (sets.has(c.name)) errs.push(`${where}: counter set ${c.name} twice in the pool`);
      sets.set(c.name, new Set(keys));
    }
    for (const d of devs) {
      if (!DNS_LABEL.test(d.name) || d.name.length > 63) errs.push(`${where}: device name ${d.name}`);
      if (names.has(d.name)) errs.push(`${where}: device ${d.name} twice in the pool`);
      names.add(d.name);
      const attrs = Object.entries(d.attributes ?? {});
      const caps = Object.entries(d.capacity ?? {});
      if (attrs.length + caps.length > LIMITS.attributesAndCapacitiesPerDevice)
        errs.push(`${d.name}: ${attrs.length + caps.length} attributes+capacities`);
      for (const [k, v] of attrs) {
        if (!qualifiedName(k)) errs.push(`${d.name}: attribute name ${k}`);
        const n = Object.keys(v).length;
        if (n !== 1) errs.push(`${d.name}.${k}: ${n} value fields`);
        if ('string' in v && Buffer.byteLength(v.string) > LIMITS.stringAttributeBytes)
          errs.push(`${d.name}.${k}: string too long`);
        if ('version' in v && !SEMVER.test(v.version))
          errs.push(`${d.name}.${k}: ${v.version} is not semver`);
      }
      for (const [k, v] of caps) {
        if (!qualifiedName(k)) errs.push(`${d.name}: capacity name ${k}`);
        if (!QUANTITY.test(v.value)) errs.push(`${d.name}.${k}: quantity ${v.value}`);
      }
      if ((d.consumesCounters?.length ?? 0) > LIMITS.consumptionsPerDevice)
        errs.push(`${d.name}: too many counter consumptions`);
    }
  }
  for (const s of slices) {
    for (const d of s.spec.devices ?? []) {
      for (const c of d.consumesCounters ?? []) {
        const known = sets.get(c.counterSet);
        if (!known) errs.push(`${d.name}: counter set ${c.counterSet} not in pool`);
        for (const k of Object.keys(c.counters))
          if (known && !known.has(k)) errs.push(`${d.name}: counter ${k} not in ${c.counterSet}`);
      }
    }
  }
  return errs;
}
