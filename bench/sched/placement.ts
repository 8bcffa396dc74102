/** `--node-selector` as the pods' placement, so they land only on the nodes the bench measures. */
import { parseSelector, type SelectorExpression } from '../../src/model/fault/selector.js';

/**
 * A label selector in kubectl's syntax as requirements, parsed (and refused in one line) as
 * `fakegpu fault inject --selector` parses it; equalities become single-value `In`s.
 */
export function requirements(text: string): SelectorExpression[] {
  if (text === '') return [];
  const s = parseSelector(text, '--node-selector');
  return [
    ...Object.entries(s.matchLabels ?? {}).map(([key, value]): SelectorExpression => ({
      key,
      operator: 'In',
      values: [value],
    })),
    ...(s.matchExpressions ?? []),
  ];
}

/** A nodeSelector where the requirements are only equalities, node affinity otherwise. */
export function placement(reqs: SelectorExpression[]): Record<string, unknown> {
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
