/** `--node-selector` as the pods' placement, so they land only on the nodes the bench measures. */
import { FakegpuError, show } from '../../src/errors.js';

export interface Requirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

/** A label selector as requirements: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`. */
export function requirements(text: string): Requirement[] {
  if (text === '') return [];
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  const key = '([A-Za-z0-9][-A-Za-z0-9_./]*)';
  return parts.map((raw) => {
    const p = raw.trim();
    let m = new RegExp(`^${key}\\s*(==|=|!=)\\s*([-A-Za-z0-9_.]*)$`).exec(p);
    if (m) return { key: m[1] ?? '', operator: m[2] === '!=' ? 'NotIn' : 'In', values: [m[3] ?? ''] };
    m = new RegExp(`^${key}\\s+(in|notin)\\s*\\(([^()]*)\\)$`).exec(p);
    if (m)
      return {
        key: m[1] ?? '',
        operator: m[2] === 'in' ? 'In' : 'NotIn',
        values: (m[3] ?? '').split(',').map((v) => v.trim()),
      };
    m = new RegExp(`^!\\s*${key}$`).exec(p);
    if (m) return { key: m[1] ?? '', operator: 'DoesNotExist' };
    m = new RegExp(`^${key}$`).exec(p);
    if (m) return { key: m[1] ?? '', operator: 'Exists' };
    throw new FakegpuError(
      '--node-selector',
      `${show(raw)} is not a label requirement (k=v, k!=v, k in (a,b), k, !k)`,
    );
  });
}

/** A nodeSelector where the requirements are only equalities, node affinity otherwise. */
export function placement(reqs: Requirement[]): Record<string, unknown> {
  if (reqs.length === 0) return {};
  if (reqs.every((r) => r.operator === 'In' && r.values?.length === 1))
    return { nodeSelector: Object.fromEntries(reqs.map((r) => [r.key, r.values?.[0] ?? ''])) };
  return {
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: reqs }],
        },
      },
    },
  };
}
