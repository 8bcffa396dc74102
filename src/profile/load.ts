import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { FakegpuError, oneOf, show } from '../errors.js';
import { findPreset, PRESET_NAMES } from '../preset/index.js';
import { ProfileSpec } from '../preset/spec.js';
import { MachineProfile } from './schema.js';

/** A profile with its preset folded in: what the hardware model is built from. */
export interface ResolvedProfile {
  name: string;
  /** Preset the profile started from, if any. */
  preset: string | null;
  spec: ProfileSpec;
}

function pathText(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)),
    '',
  );
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur = root;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

/** The first schema issue as one line naming the field, the value found and what is allowed. */
function toError(error: z.ZodError, input: unknown, prefix: string): FakegpuError {
  const [first] = error.issues;
  if (!first) return new FakegpuError(prefix || 'profile', 'invalid');
  const field = [prefix, pathText(first.path)].filter(Boolean).join('.');
  const got = first.code === 'unrecognized_keys' ? '' : ` (got ${show(valueAt(input, first.path))})`;
  const more = error.issues.length > 1 ? ` [and ${error.issues.length - 1} more problem(s)]` : '';
  return new FakegpuError(field || 'profile', `${first.message}${got}${more}`);
}

export function parseProfileText(text: string, source: string): MachineProfile {
  return parseYamlAs(MachineProfile, text, source);
}

/** YAML text checked against a schema; the first problem as one line naming the field. */
export function parseYamlAs<T extends z.ZodType>(schema: T, text: string, source: string): z.infer<T> {
  const doc = parseDocument(text, { prettyErrors: true });
  const [yamlError] = doc.errors;
  if (yamlError) {
    const line = yamlError.linePos?.[0];
    throw new FakegpuError(
      source,
      `not valid YAML${line ? ` at line ${line.line}, column ${line.col}` : ''}: ${yamlError.code}`,
    );
  }
  const input: unknown = doc.toJS();
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw toError(parsed.error, input, '');
  return parsed.data;
}

/** Folds a profile's spec over its preset: lists replace, scalars and objects override field by field. */
export function mergeOverPreset(spec: ProfileSpec): ResolvedProfile['spec'] {
  if (!spec.preset) return spec;
  const base = findPreset(spec.preset, 'spec.preset').spec;
  const driver = { ...base.driver, ...spec.driver };
  const merged: ProfileSpec = {
    ...base,
    ...spec,
    driver,
    overrides: [...(base.overrides ?? []), ...(spec.overrides ?? [])],
  };
  if (spec.mig ?? base.mig) merged.mig = { ...base.mig, ...spec.mig };
  return merged;
}

/** A profile reference names a file when it has a path separator or a YAML suffix; else a preset. */
export function isProfileFile(ref: string): boolean {
  return /[/\\]|\.ya?ml$/i.test(ref);
}

/** `ref` is a preset name or a path to a MachineProfile YAML file. */
export function resolveProfile(ref: string, field = '--profile'): ResolvedProfile {
  if (!isProfileFile(ref)) {
    const preset = findPreset(ref, field);
    return { name: preset.name, preset: preset.name, spec: preset.spec };
  }
  let text: string;
  try {
    text = readFileSync(ref, 'utf8');
  } catch (e) {
    const why = e instanceof Error && 'code' in e ? String(e.code) : 'unreadable';
    throw new FakegpuError(
      field,
      `cannot read profile file ${show(ref)} (${why}); give a preset name (${oneOf(PRESET_NAMES)}) or a YAML file`,
    );
  }
  const profile = parseProfileText(text, ref);
  return {
    name: profile.metadata.name,
    preset: profile.spec.preset ?? null,
    spec: mergeOverPreset(profile.spec),
  };
}

export function validateSpec(spec: unknown, prefix: string): ProfileSpec {
  const parsed = ProfileSpec.safeParse(spec);
  if (!parsed.success) throw toError(parsed.error, spec, prefix);
  return parsed.data;
}
