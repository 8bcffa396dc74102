import { z } from 'zod';
import { FakegpuError } from '../../errors.js';

/**
 * A zod schema as the JSON Schema a consumer takes: an OpenAPI v3 schema that Kubernetes accepts as a
 * CRD's structural schema, or a draft-07 schema for Helm. zod writes what it can; the consumer's own
 * keywords (CEL rules, list types, formats, ...) come from a table of extras keyed by path, and
 * anything zod writes that the consumer refuses is an error naming the path, never dropped silently.
 */

export type Json = string | number | boolean | null | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

/**
 * Extras by path: `spec.fault` (properties), `spec.devices[]` (the items of a list), `status.nodes{}`
 * (the values of a map); `''` is the whole object.
 */
export type Extras = Readonly<Record<string, JsonObject>>;

export type Target = 'crd' | 'helm';

/** The order keys are written in, so a diff of a generated file reads like the schema. */
const KEY_ORDER = [
  '$schema',
  'description',
  'type',
  'format',
  'required',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-preserve-unknown-fields',
  'enum',
  'default',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'maxProperties',
  'items',
  'properties',
  'additionalProperties',
  'oneOf',
  'anyOf',
];

function isObject(j: Json | undefined): j is JsonObject {
  return typeof j === 'object' && j !== null && !Array.isArray(j);
}

const isEmpty = (j: Json | undefined): boolean => isObject(j) && Object.keys(j).length === 0;

function ordered(o: JsonObject): JsonObject {
  const rank = (k: string): number => {
    const i = KEY_ORDER.indexOf(k);
    return i < 0 ? KEY_ORDER.length : i;
  };
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => rank(a) - rank(b)));
}

/** The segments of an extras path: `status.nodes{}.devices[]` → status, nodes, {}, devices, []. */
function segments(path: string): string[] {
  return path.match(/[^.[\]{}]+|\[\]|\{\}/g) ?? [];
}

const join = (path: string, seg: string): string =>
  seg === '[]' || seg === '{}' || path === '' ? `${path}${seg}` : `${path}.${seg}`;

/** An anyOf of enums of one type (zod's union of literals or enums) is one enum. */
function mergedEnum(branches: Json[]): JsonObject | null {
  const type = isObject(branches[0]) ? branches[0].type : undefined;
  const values: Json[] = [];
  for (const b of branches) {
    if (!isObject(b) || b.type !== type || !Array.isArray(b.enum) || Object.keys(b).length !== 2) return null;
    values.push(...b.enum);
  }
  return type === undefined ? null : { type, enum: values };
}

/**
 * What zod writes, tidied for every target: JavaScript's safe-integer bounds of `.int()` are not limits
 * of the field, and empty `properties`, `items` and `additionalProperties` and string-only
 * `propertyNames` say nothing.
 */
function tidy(node: JsonObject, path: string, target: Target): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref' || k === '$defs' || k === 'definitions')
      throw new FakegpuError(path || '(root)', `zod wrote ${k}; give the schema no id so that it is inlined`);
    if ((k === 'minimum' || k === 'maximum') && Math.abs(Number(v)) === Number.MAX_SAFE_INTEGER) continue;
    if ((k === 'properties' || k === 'items' || k === 'additionalProperties') && isEmpty(v)) continue;
    if (k === 'propertyNames' && isObject(v) && v.type === 'string' && Object.keys(v).length === 1) continue;
    if (k === 'additionalProperties' && v === false && target === 'crd') continue;
    if (k === 'properties' && isObject(v))
      out[k] = Object.fromEntries(
        Object.entries(v).map(([name, p]) => [name, tidyAt(p, join(path, name), target)]),
      );
    else if (k === 'items') out[k] = tidyAt(v, join(path, '[]'), target);
    else if (k === 'additionalProperties' && isObject(v)) out[k] = tidyAt(v, join(path, '{}'), target);
    else if ((k === 'anyOf' || k === 'oneOf') && Array.isArray(v)) {
      const merged = mergedEnum(v);
      if (merged) Object.assign(out, merged);
      else out[k] = v.map((b, i) => tidyAt(b, `${path}(${k} ${i})`, target));
    } else out[k] = v;
  }
  return out;
}

function tidyAt(j: Json, path: string, target: Target): JsonObject {
  if (!isObject(j)) throw new FakegpuError(path, `zod wrote ${JSON.stringify(j)} where a schema belongs`);
  return tidy(j, path, target);
}

/** The node at an extras path, or an error naming the path: a table entry must not outlive its field. */
function nodeAt(root: JsonObject, path: string): JsonObject {
  let cur = root;
  for (const seg of segments(path)) {
    const props = cur.properties;
    const next =
      seg === '[]'
        ? cur.items
        : seg === '{}'
          ? cur.additionalProperties
          : isObject(props)
            ? props[seg]
            : undefined;
    if (!isObject(next)) throw new FakegpuError(path, 'is in the table of extras but not in the schema');
    cur = next;
  }
  return cur;
}

/** The schemas right under a node, each with its path. */
function children(node: JsonObject, path: string): [JsonObject, string][] {
  const out: [JsonObject, string][] = [];
  const props = node.properties;
  if (isObject(props))
    for (const [k, v] of Object.entries(props)) if (isObject(v)) out.push([v, join(path, k)]);
  if (isObject(node.items)) out.push([node.items, join(path, '[]')]);
  if (isObject(node.additionalProperties)) out.push([node.additionalProperties, join(path, '{}')]);
  return out;
}

/** Keywords of JSON Schema that a CRD's structural schema does not allow where zod would write them. */
const NOT_STRUCTURAL = ['anyOf', 'oneOf', 'allOf', 'not', 'const', 'nullable', 'propertyNames', '$schema'];

/** Kubernetes' rules of a structural schema that zod's output could break, each with the path. */
function checkStructural(node: JsonObject, path: string): void {
  const where = path || '(root)';
  for (const k of NOT_STRUCTURAL)
    if (k in node)
      throw new FakegpuError(
        where,
        `${k} is not allowed in a CRD's structural schema; express it in zod or the table`,
      );
  if (node.type === undefined && node['x-kubernetes-preserve-unknown-fields'] !== true)
    throw new FakegpuError(where, 'has no type; give it one in zod, or x-kubernetes-preserve-unknown-fields');
  if ('properties' in node && 'additionalProperties' in node)
    throw new FakegpuError(where, 'has both properties and additionalProperties, which a CRD does not allow');
  for (const [child, at] of children(node, path)) checkStructural(child, at);
}

/** JavaScript's `source` escapes `/`, which a pattern in JSON needs not: the files show it bare. */
const bareSlashes = (pattern: string): string => pattern.replace(/(?<!\\)((?:\\\\)*)\\\//g, '$1/');

/** Keys in KEY_ORDER, patterns with bare slashes, all the way down. */
function finish(node: JsonObject): JsonObject {
  const out = ordered(node);
  if (typeof out.pattern === 'string') out.pattern = bareSlashes(out.pattern);
  const props = out.properties;
  if (isObject(props)) for (const [k, v] of Object.entries(props)) if (isObject(v)) props[k] = finish(v);
  for (const k of ['items', 'additionalProperties']) {
    const v = out[k];
    if (isObject(v)) out[k] = finish(v);
  }
  return out;
}

/**
 * The schema of `schema` for `target`, with `extras` merged in at their paths (an extra's keyword
 * replaces zod's). `what` names the file in errors. The input side of zod: a field with a default is
 * optional, as it is to whoever writes the object.
 */
export function jsonSchema(schema: z.ZodType, target: Target, extras: Extras, what: string): JsonObject {
  const raw = z.toJSONSchema(schema, {
    target: target === 'crd' ? 'openapi-3.0' : 'draft-07',
    io: 'input',
    reused: 'inline',
    cycles: 'throw',
    unrepresentable: 'throw',
  }) as unknown as JsonObject;
  const { $schema: _drop, ...rest } = raw;
  try {
    const root = tidy(rest, '', target);
    for (const [path, extra] of Object.entries(extras)) Object.assign(nodeAt(root, path), extra);
    if (target === 'crd') checkStructural(root, '');
    return finish(root);
  } catch (e) {
    if (e instanceof FakegpuError) throw new FakegpuError(`${what}: ${e.field}`, e.detail);
    throw e;
  }
}
