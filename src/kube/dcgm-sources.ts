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
 * `kubectl describe pod` shows it, per pod and message; its GPUs keep the default load. What was told
 * is kept per pod, and only while the pod is in the cache (`keepOnly` after each scrape): pods come
 * and go for the life of the process.
 */
export class BadLoadReporter {
  /** The message last told, by pod. */
  private readonly told = new Map<string, string>();

  constructor(
    private readonly api: ClusterApi,
    private readonly log: Logger,
    private readonly component: string,
  ) {}

  get size(): number {
    return this.told.size;
  }

  readonly report = (pod: PodView, err: FakegpuError): void => {
    const key = `${pod.namespace}/${pod.name}`;
    if (this.told.get(key) === err.message) return;
    this.told.set(key, err.message);
    this.log.warn({ pod: key, err: err.message }, 'load annotation ignored');
    this.api
      .createEvent(
        pod.namespace,
        warningEvent({
          regarding: { kind: 'Pod', name: pod.name, namespace: pod.namespace, apiVersion: 'v1' },
          reason: 'FakegpuLoadInvalid',
          action: 'ReportGpuMetrics',
          note: err.message,
          component: this.component,
        }),
      )
      .catch((e: unknown) => {
        this.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'could not record the event');
      });
  };

  /** Forgets the pods not among these, the cache's pods now: deleted, or their claims gone. */
  keepOnly(pods: Iterable<PodView>): void {
    if (this.told.size === 0) return;
    const live = new Set<string>();
    for (const p of pods) live.add(`${p.namespace}/${p.name}`);
    for (const k of this.told.keys()) if (!live.has(k)) this.told.delete(k);
  }
}
