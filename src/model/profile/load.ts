import { parseAllDocuments, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { clip, FakegpuError, schemaError } from '../../errors.js';
import { findPreset } from '../preset/index.js';
import { ProfileSpec } from '../preset/machine-spec.js';
import { MachineProfile } from './schema.js';

/** A profile with its preset folded in: what the hardware model is built from. */
export interface ResolvedProfile {
  name: string;
  /** Preset the profile started from, if any. */
  preset: string | null;
  spec: ProfileSpec;
}

export function parseProfileText(text: string, source: string): MachineProfile {
  return parseYamlAs(MachineProfile, text, source);
}

/** YAML text checked against a schema; the first problem as one line naming the field. */
export function parseYamlAs<T extends z.ZodType>(schema: T, text: string, source: string): z.infer<T> {
  const doc = parseDocument(text, { prettyErrors: true });
  refuseYamlErrors(doc, source);
  const input = toPlain(doc, source);
  // An empty file, or only comments: zod would say "expected object, received null (got null)".
  if (input === null || input === undefined)
    throw new FakegpuError(source, 'is empty: no YAML document, or only comments');
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw schemaError(parsed.error, input, '');
  return parsed.data;
}

/** Every document of a YAML stream as plain values, refused in one line as a profile is. */
export function parseYamlDocuments(text: string, source: string): unknown[] {
  return parseAllDocuments(text, { prettyErrors: true }).map((doc) => {
    refuseYamlErrors(doc, source);
    return toPlain(doc, source);
  });
}

/**
 * The objects of a saved `kubectl get ... -o yaml`: the items of a `List` or `<listKind>`, or one object
 * per YAML document, whichever the user saved.
 */
export function parseListItems(text: string, source: string, listKind: string): unknown[] {
  return listDocuments(text, source).flatMap((d) => {
    const o = d as { kind?: string; items?: unknown[] } | null;
    if (o === null || typeof o !== 'object') return [];
    return o.kind === 'List' || o.kind === listKind ? (o.items ?? []) : [d];
  });
}

/**
 * The most YAML text a saved list may be: the YAML parser holds some 70 bytes for each byte it reads
 * (30 MB of saved slices, 50,000 devices: 56 s and 2.2 GB; JSON.parse: 1.2 s and 150 MB).
 */
export const MAX_YAML_LIST = 16 * 1024 * 1024;

/**
 * `kubectl -o json` parsed as JSON, for the reason above. Anything JSON.parse refuses goes to the YAML
 * parser, whose messages name the line and column.
 */
function listDocuments(text: string, source: string): unknown[] {
  if (/^\s*\{/.test(text)) {
    try {
      return [JSON.parse(text)];
    } catch {
      // Not JSON after all (YAML flow style, or broken): the YAML parser says where.
    }
  }
  if (text.length > MAX_YAML_LIST)
    throw new FakegpuError(
      source,
      `${(text.length / 1024 / 1024).toFixed(1)} MiB of YAML; at most ${MAX_YAML_LIST / 1024 / 1024} MiB is parsed as YAML (the parser needs some 70 times that in memory); save the objects as JSON (kubectl get ... -o json)`,
    );
  return parseYamlDocuments(text, source);
}

function refuseYamlErrors(doc: Document, source: string): void {
  const [yamlError] = doc.errors;
  if (!yamlError) return;
  const line = yamlError.linePos?.[0];
  throw new FakegpuError(
    source,
    `not valid YAML${line ? ` at line ${line.line}, column ${line.col}` : ''}: ${yamlError.code}`,
  );
}

/** The yaml library's own default, kept explicit: it is part of what a profile may be. */
const MAX_ALIASES = 100;

/**
 * The document as plain values. Expanding aliases is where YAML can explode (a "billion laughs" of nested
 * aliases), so the library stops at MAX_ALIASES and throws, as it does for an alias without an anchor.
 */
function toPlain(doc: Document, source: string): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (e) {
    if (!(e instanceof ReferenceError)) throw e;
    if (/alias count/i.test(e.message)) {
      throw new FakegpuError(
        source,
        `not valid YAML: more than ${MAX_ALIASES} alias expansions (*name); at most ${MAX_ALIASES} are allowed, as a guard against alias bombs; write the values out`,
      );
    }
    throw new FakegpuError(source, `not valid YAML: ${clip(e.message)}`);
  }
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

/** Where `-` as a profile is read from: standard input, as other command-line tools do. */
export const STDIN = '-';

/**
 * A profile reference names a file when it is `-` (standard input), has a path separator or a YAML or
 * JSON suffix (JSON is YAML); else a preset.
 */
export function isProfileFile(ref: string): boolean {
  return ref === STDIN || /[/\\]|\.(ya?ml|json)$/i.test(ref);
}

/** How a profile file is named in messages. */
export function profileSource(ref: string): string {
  return ref === STDIN ? 'stdin' : ref;
}

/** A profile file's text parsed and folded over its preset. */
export function profileFromText(text: string, source: string): ResolvedProfile {
  return resolved(parseProfileText(text, source));
}

/** A MachineProfile built in memory (`capture node`'s), checked by the schema a file is. */
export function profileFromObject(input: unknown): ResolvedProfile {
  const parsed = MachineProfile.safeParse(input);
  if (!parsed.success) throw schemaError(parsed.error, input, '');
  return resolved(parsed.data);
}

function resolved(profile: MachineProfile): ResolvedProfile {
  return {
    name: profile.metadata.name,
    preset: profile.spec.preset ?? null,
    spec: mergeOverPreset(profile.spec),
  };
}

export function validateSpec(spec: unknown, prefix: string): ProfileSpec {
  const parsed = ProfileSpec.safeParse(spec);
  if (!parsed.success) throw schemaError(parsed.error, spec, prefix);
  return parsed.data;
}
