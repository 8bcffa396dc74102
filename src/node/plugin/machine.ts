import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { writeIfChanged } from '../durable/file.js';
import { KubeApi } from '../../kube/api.js';
import { ApiClient } from '../../kube/client.js';
import type { ResourceSlice } from '../../kube/types/resource.js';
import { type ResolvedProfile } from '../../model/profile/load.js';
import { MiB, readBounded } from '../../process/files.js';
import { resolveProfile } from '../../process/profile-file.js';
import { readSlices } from '../../model/slice/read.js';
import type { PluginOptions } from './run.js';

/** What this node is: its machine (a profile, or one a node label names), or slices replayed from a file. */

/** Slices replayed from a file: the node's name goes where the capture had its own. */
export function slicesFromFile(path: string, nodeName: string, driverName: string): ResourceSlice[] {
  const text = readBounded(path, '--slices-file', { bytes: 64 * MiB, what: 'saved Kubernetes objects' });
  const items = readSlices(text, path, '--slices-file');
  return items.map((s, i) => ({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { generateName: `${i.toString(16).padStart(5, '0')}-${driverName}-${nodeName}-` },
    spec: {
      ...s.spec,
      driver: driverName,
      nodeName,
      pool: { name: nodeName, generation: 1, resourceSliceCount: items.length },
    },
  }));
}

/**
 * The machine this node pretends to be. A node label may name it, read when the plugin starts; the
 * choice is remembered in the state dir, so a start while the API server is away picks the same
 * machine its checkpoint was made for, and unprepare keeps working.
 */
export async function chooseProfile(o: PluginOptions, kc: KubeConfig, log: Logger): Promise<ResolvedProfile> {
  if (!o.profileLabel) return o.profile;
  const remembered = join(o.stateDir, 'profile-choice.json');
  let value: string | null;
  try {
    const node = await new KubeApi(new ApiClient(kc, { timeoutMs: PROFILE_LABEL_WAIT_MS })).readNode(
      o.nodeName,
    );
    value = node.metadata?.labels?.[o.profileLabel] ?? null;
    writeIfChanged(remembered, `${JSON.stringify({ label: o.profileLabel, value })}\n`, { mode: 0o600 });
  } catch (e) {
    try {
      value = (JSON.parse(readFileSync(remembered, 'utf8')) as { value: string | null }).value;
    } catch {
      value = null;
    }
    log.warn(
      { err: e instanceof Error ? e.message : String(e), label: o.profileLabel, value },
      'reading the node label failed; using the machine chosen at the last start',
    );
  }
  if (!value) return o.profile;
  log.info({ label: o.profileLabel, profile: value }, 'profile chosen by node label');
  return resolveProfile(value, `node label ${o.profileLabel}`);
}

const PROFILE_LABEL_WAIT_MS = 10_000;
