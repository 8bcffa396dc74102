import { z } from 'zod';
import { FakegpuError, show } from '../../errors.js';
import { strict } from '../preset/machine-spec.js';
import { LABEL_KEY, LABEL_VALUE } from '../../kube/types/names.js';

/**
 * A fault's `nodeSelector`: a metav1.LabelSelector, matched here as the API server matches one, because
 * the plugin on each node and the fleet decide on their own, without asking the server, whether a
 * fault is theirs. `--selector` takes kubectl's text form of the same thing.
 */

export const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
export type SelectorOperator = (typeof SELECTOR_OPERATORS)[number];

export const LIMITS = { matchLabels: 64, matchExpressions: 16, values: 64 } as const;

export function isLabelKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? '' : key.slice(0, slash);
  const name = key.slice(slash + 1);
  return LABEL_KEY.test(key) && prefix.length <= 253 && name.length <= 63;
}

/** What a label key is, for messages. */
export const LABEL_KEY_FORM = '[prefix/]name, the name at most 63 letters, digits, "-", "_", "."';
const KEY_RULE = `must be a label key: ${LABEL_KEY_FORM}`;
const VALUE_RULE =
  'must be a label value: at most 63 letters, digits, "-", "_", ".", starting and ending alphanumeric';

const LabelKey = z.string().refine(isLabelKey, KEY_RULE);
const LabelValue = z.string().max(63).regex(LABEL_VALUE, VALUE_RULE);

/** The message of the CRD's CEL rule on an expression's values, which the parser gives too. */
export const VALUES_RULE = 'values must be given for In and NotIn, and only for them';

const Expression = strict({
  key: LabelKey,
  operator: z.enum(SELECTOR_OPERATORS),
  values: z.array(LabelValue).max(LIMITS.values).optional(),
}).superRefine((e, ctx) => {
  const wants = e.operator === 'In' || e.operator === 'NotIn';
  if (wants !== (e.values !== undefined && e.values.length > 0))
    ctx.addIssue({
      code: 'custom',
      path: ['values'],
      message: VALUES_RULE,
    });
});

export const LabelSelector = strict({
  matchLabels: z
    .record(LabelKey, LabelValue)
    .refine((m) => Object.keys(m).length <= LIMITS.matchLabels, `at most ${LIMITS.matchLabels} labels`)
    .optional(),
  matchExpressions: z.array(Expression).max(LIMITS.matchExpressions).optional(),
});
export type LabelSelector = z.infer<typeof LabelSelector>;
export type SelectorExpression = z.infer<typeof Expression>;

/** Whether labels satisfy the selector; an empty selector matches every node, as in Kubernetes. */
export function selectorMatches(s: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(s.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of s.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    const inValues = has && value !== undefined && (e.values ?? []).includes(value);
    const ok =
      e.operator === 'In'
        ? inValues
        : e.operator === 'NotIn'
          ? !inValues
          : e.operator === 'Exists'
            ? has
            : !has;
    if (!ok) return false;
  }
  return true;
}

/** kubectl's text form, the inverse of `parseSelector`. */
export function formatSelector(s: LabelSelector): string {
  const terms = Object.entries(s.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of s.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    terms.push(
      e.operator === 'In'
        ? `${e.key} in (${values})`
        : e.operator === 'NotIn'
          ? `${e.key} notin (${values})`
          : e.operator === 'Exists'
            ? e.key
            : `!${e.key}`,
    );
  }
  return terms.join(',');
}

/** Commas separate terms, except inside the parentheses of a set. */
function terms(text: string): string[] | null {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const c of text) {
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (depth < 0 || depth > 1) return null;
    if (c === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  if (depth !== 0) return null;
  out.push(cur.trim());
  return out;
}

const KEY = String.raw`([^\s=!(),]+)`;
const SET = new RegExp(String.raw`^${KEY}\s+(in|notin)\s*\(([^()]*)\)$`);
const EQUALITY = new RegExp(String.raw`^${KEY}\s*(==|=|!=)\s*([^\s=!(),]*)$`);
const EXISTS = new RegExp(String.raw`^(!?)\s*${KEY}$`);

/**
 * kubectl's selector syntax (`k=v,k2 in (a,b),k3 notin (c),k4,!k5`, also `==` and `!=`) as a
 * LabelSelector: equalities as matchLabels, the rest as expressions. Refused in one line naming the
 * term that is wrong.
 */
export function parseSelector(text: string, field: string): LabelSelector {
  const usage =
    'expected terms such as k=v, k!=v, "k in (a,b)", "k notin (a,b)", k or !k, separated by commas';
  if (text.trim() === '') throw new FakegpuError(field, `empty; ${usage}`);
  const list = terms(text);
  if (!list) throw new FakegpuError(field, `${show(text)}: unbalanced parentheses; ${usage}`);
  const matchLabels: Record<string, string> = {};
  const matchExpressions: SelectorExpression[] = [];
  const key = (k: string): string => {
    if (!isLabelKey(k)) throw new FakegpuError(field, `${show(k)} ${KEY_RULE}`);
    return k;
  };
  const value = (v: string): string => {
    if (v.length > 63 || !LABEL_VALUE.test(v)) throw new FakegpuError(field, `${show(v)} ${VALUE_RULE}`);
    return v;
  };
  for (const t of list) {
    const set = SET.exec(t);
    const eq = EQUALITY.exec(t);
    const ex = EXISTS.exec(t);
    if (set?.[1] && set[3] !== undefined) {
      const values = set[3].split(',').map((v) => v.trim());
      if (values.some((v) => v === ''))
        throw new FakegpuError(field, `${show(t)}: a set needs values, none of them empty`);
      if (values.length > LIMITS.values)
        throw new FakegpuError(field, `${show(t)}: more than ${LIMITS.values} values`);
      matchExpressions.push({
        key: key(set[1]),
        operator: set[2] === 'in' ? 'In' : 'NotIn',
        values: [...new Set(values.map(value))],
      });
    } else if (eq?.[1] && eq[3] !== undefined) {
      const k = key(eq[1]);
      const v = value(eq[3]);
      if (eq[2] === '!=') matchExpressions.push({ key: k, operator: 'NotIn', values: [v] });
      else if (Object.hasOwn(matchLabels, k) && matchLabels[k] !== v)
        throw new FakegpuError(field, `${show(t)}: ${k} is already required to be ${show(matchLabels[k])}`);
      else matchLabels[k] = v;
    } else if (ex?.[2]) {
      matchExpressions.push({ key: key(ex[2]), operator: ex[1] ? 'DoesNotExist' : 'Exists' });
    } else throw new FakegpuError(field, `${show(t)} is not a selector term; ${usage}`);
  }
  if (Object.keys(matchLabels).length > LIMITS.matchLabels)
    throw new FakegpuError(field, `more than ${LIMITS.matchLabels} equalities`);
  if (matchExpressions.length > LIMITS.matchExpressions)
    throw new FakegpuError(field, `more than ${LIMITS.matchExpressions} terms other than equalities`);
  return {
    ...(Object.keys(matchLabels).length ? { matchLabels } : {}),
    ...(matchExpressions.length ? { matchExpressions } : {}),
  };
}
