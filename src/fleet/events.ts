import type { Logger } from 'pino';
import type { FakegpuError } from '../errors.js';
import type { ClusterApi } from '../kube/api.js';
import { warningEvent } from '../kube/event.js';

/**
 * A node whose machine cannot be rendered (unknown preset, bad file, unknown pool): a Warning event on
 * the node, where `kubectl describe node` shows it, and a log line; other nodes go on. The event is
 * best effort: failing to record it is logged, not retried.
 */
export async function reportBadProfile(
  api: ClusterApi,
  log: Logger,
  node: { name: string; uid: string; profile: string | null; pool: string | null },
  err: FakegpuError,
): Promise<void> {
  log.error(
    { node: node.name, profile: node.profile, pool: node.pool, err: err.message },
    'cannot render the node’s profile',
  );
  try {
    await api.createEvent(
      'default',
      warningEvent({
        regarding: { kind: 'Node', name: node.name, uid: node.uid, apiVersion: 'v1' },
        reason: 'FakegpuProfileInvalid',
        action: 'PublishResourceSlices',
        note: err.message,
        component: 'fleet',
      }),
    );
  } catch (e) {
    log.warn(
      { node: node.name, err: e instanceof Error ? e.message : String(e) },
      'could not record the event',
    );
  }
}
