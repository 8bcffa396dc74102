import { MachineProfile } from '../../model/profile/schema.js';
import { jsonSchema, type Json, type JsonObject } from './convert.js';

/**
 * docs/machine-profile.md: every field of a MachineProfile, from the zod schema `validate` checks
 * against, so the reference cannot drift from what is accepted. Type, allowed values and ranges come
 * from the schema's constraints, the rest from each field's `.describe()`, whose closing `Default: …`
 * sentence fills the default column.
 */

export const PROFILE_REFERENCE = 'docs/machine-profile.md';

interface Row {
  path: string;
  type: string;
  required: boolean;
  allowed: string;
  default: string;
  description: string;
}

const isObject = (j: Json | undefined): j is JsonObject =>
  typeof j === 'object' && j !== null && !Array.isArray(j);

const code = (v: Json): string => `\`${typeof v === 'string' ? v : JSON.stringify(v)}\``;

/** A nullable or union field: its branches, `null` apart. */
function branches(node: JsonObject): { types: JsonObject[]; nullable: boolean } {
  const any = node.anyOf ?? node.oneOf;
  if (!Array.isArray(any)) return { types: [node], nullable: false };
  const types = any.filter(isObject);
  const nonNull = types.filter((t) => t.type !== 'null');
  return { types: nonNull, nullable: nonNull.length < types.length };
}

function typeOf(node: JsonObject): string {
  const { types, nullable } = branches(node);
  const one = (t: JsonObject): string => {
    if (t.type === 'array') return `list of ${isObject(t.items) ? one(t.items) : 'any'}`;
    if (t.type === 'object' && isObject(t.additionalProperties))
      return `map of string to ${one(t.additionalProperties)}`;
    if (t.const !== undefined) return typeof t.const;
    return typeof t.type === 'string' ? t.type : 'any';
  };
  return [...types.map(one), ...(nullable ? ['null'] : [])].join(' or ');
}

/** A bound as written: JSON Schema bounds are numbers; anything else shows as JSON. */
const num = (j: Json | undefined): string | undefined =>
  j === undefined ? undefined : typeof j === 'number' ? String(j) : JSON.stringify(j);

/** `1 to 64`, `at least 1 characters`… as the bounds given. */
function range(low: Json | undefined, high: Json | undefined, unit: string): string[] {
  const [min, max] = [num(low), num(high)];
  if (min !== undefined && max !== undefined) return [`${min} to ${max}${unit}`];
  if (min === '1' && unit === ' characters') return ['non-empty'];
  if (min !== undefined) return [`at least ${min}${unit}`];
  if (max !== undefined) return [`at most ${max}${unit}`];
  return [];
}

function allowedOf(node: JsonObject): string {
  const parts: string[] = [];
  for (const t of branches(node).types) {
    if (Array.isArray(t.enum)) parts.push(t.enum.map(code).join(', '));
    if (t.const !== undefined) parts.push(code(t.const));
    parts.push(...range(t.minimum, t.maximum, ''));
    if (t.exclusiveMinimum !== undefined) parts.push(`> ${num(t.exclusiveMinimum) ?? ''}`);
    if (t.exclusiveMaximum !== undefined) parts.push(`< ${num(t.exclusiveMaximum) ?? ''}`);
    parts.push(...range(t.minLength, t.maxLength, ' characters'));
    if (typeof t.pattern === 'string') parts.push(`matches ${code(t.pattern)}`);
    parts.push(...range(t.minItems, t.maxItems, ' items'));
  }
  return parts.join('; ');
}

/** `… text. Default: x.` → the text and the default. */
function splitDefault(description: string): { text: string; default: string } {
  const at = description.lastIndexOf('Default: ');
  if (at < 0) return { text: description, default: '' };
  return { text: description.slice(0, at).trim(), default: description.slice(at + 9).replace(/\.$/, '') };
}

/** The field and every field under it, depth first, in the schema's order. */
function rows(node: JsonObject, path: string, required: boolean): Row[] {
  const { text, default: dflt } = splitDefault(typeof node.description === 'string' ? node.description : '');
  const out: Row[] = [];
  if (path !== '')
    out.push({
      path,
      type: typeOf(node),
      required,
      allowed: allowedOf(node),
      default: dflt,
      description: text,
    });
  const inner = branches(node).types[0] ?? node;
  const item = inner.type === 'array' && isObject(inner.items) ? inner.items : null;
  const values = isObject(inner.additionalProperties) ? inner.additionalProperties : null;
  const [obj, prefix] = item ? [item, `${path}[]`] : values ? [values, `${path}.<name>`] : [inner, path];
  const props = obj.properties;
  if (!isObject(props)) return out;
  const req = Array.isArray(obj.required) ? obj.required : [];
  for (const [k, v] of Object.entries(props))
    if (isObject(v)) out.push(...rows(v, prefix === '' ? k : `${prefix}.${k}`, req.includes(k)));
  return out;
}

/** Table cells: one line each, pipes escaped. */
const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function profileReference(): string {
  const schema = jsonSchema(MachineProfile, 'helm', {}, PROFILE_REFERENCE);
  const lines = [
    '# MachineProfile field reference',
    '',
    '<!-- Generated by `npm run schemas` (src/tools/schemas/profile-reference.ts) from the zod schema',
    '     (src/model/profile/schema.ts, src/model/preset/machine-spec.ts): edit those and regenerate. -->',
    '',
    'Every field of a MachineProfile (`apiVersion: fakegpu.dev/v1alpha1`), as `fakegpu validate` checks it.',
    'A field left out is derived as its default says; a field not listed here is refused. How profiles',
    'are written and captured: [profiles-and-presets.md](profiles-and-presets.md).',
    '',
    '| field | type | required | allowed | default | description |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows(schema, '', true).map((r) =>
      [`\`${r.path}\``, r.type, r.required ? 'yes' : 'no', r.allowed, r.default, r.description]
        .map(cell)
        .join(' | ')
        .replace(/^/, '| ')
        .replace(/$/, ' |'),
    ),
    '',
  ];
  return lines.join('\n');
}
