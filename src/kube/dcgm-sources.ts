import type { Logger } from 'pino';
import type { FakegpuError } from '../errors.js';
import type { ClusterApi } from './api.js';
import type { ApiClient } from './client.js';
import { Informer } from './informer.js';
import { CLAIMS_PATH } from './types/claim.js';
import { warningEvent } from './event.js';
import { claimView, podView, type ClaimView, type PodView } from '../model/dcgm/attribution.js';

export const PODS_PATH = '/api/v1/pods';

/** Pods that use claims, reduced on arrival (`podView`); on one node when `nodeName` is given. */
export function podInformer(http: ApiClient, log: Logger, nodeName?: string): Informer<PodView> {
  return new Informer(
    http,
    PODS_PATH,
    nodeName ? { fieldSelector: `spec.nodeName=${nodeName}` } : {},
    podView,
    log,
  );
}

/** Allocated claims, reduced to their results. */
export function claimInformer(http: ApiClient, log: Logger): Informer<ClaimView> {
  return new Informer(http, CLAIMS_PATH, {}, claimView, log);
}

/**
 * A pod whose load annotation does not parse: one log line and one Warning event on the pod, where
 * `kubectl describe pod` shows it, per pod and value; its GPUs keep the default load.
 */
export function badLoadReporter(
  api: ClusterApi,
  log: Logger,
  component: string,
): (pod: PodView, err: FakegpuError) => void {
  const told = new Set<string>();
  return (pod, err) => {
    const key = `${pod.namespace}/${pod.name}\0${err.message}`;
    if (told.has(key)) return;
    told.add(key);
    log.warn({ pod: `${pod.namespace}/${pod.name}`, err: err.message }, 'load annotation ignored');
    api
      .createEvent(
        pod.namespace,
        warningEvent({
          regarding: { kind: 'Pod', name: pod.name, namespace: pod.namespace, apiVersion: 'v1' },
          reason: 'FakegpuLoadInvalid',
          action: 'ReportGpuMetrics',
          note: err.message,
          component,
        }),
      )
      .catch((e: unknown) => {
        log.warn({ err: e instanceof Error ? e.message : String(e) }, 'could not record the event');
      });
  };
}
