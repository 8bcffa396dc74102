import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../src/process/repo.js';

/** A CRD of deploy/crds/ as the unit tests read it: the parts of its OpenAPI schema they check. */
export interface Schema {
  type?: string;
  enum?: unknown[];
  pattern?: string;
  maxLength?: number;
  maxItems?: number;
  maxProperties?: number;
  minimum?: number;
  maximum?: number;
  format?: string;
  default?: unknown;
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema;
  items?: Schema;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-validations'?: { rule: string; message: string }[];
}

export interface Crd {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; listKind?: string; plural: string; singular?: string; shortNames?: string[] };
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      subresources?: { status?: object };
      additionalPrinterColumns?: { name: string; jsonPath: string }[];
      schema: { openAPIV3Schema: Schema };
    }[];
  };
}

export const crdText = (file: string): string =>
  readFileSync(join(REPO_ROOT, 'deploy', 'crds', file), 'utf8');

/** The one CRD a file of deploy/crds/ holds, parsed without errors. */
export function readCrd(file: string): Crd {
  const docs = parseAllDocuments(crdText(file));
  assert.equal(docs.length, 1);
  const [doc] = docs;
  assert.ok(doc);
  assert.deepEqual(doc.errors, []);
  return doc.toJS() as Crd;
}
