/**
 * The bench's pods as one watch of the namespace sees them: startup is timed from the bench's POST to
 * the watch's first sight of the pod Running (CL2's PodStartupLatency, finer than creationTimestamp).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { ResumableWatch } from '../../src/kube/watch.js';
import { asError, eachPage, Raw } from '../support.js';
import { log } from './config.js';
import { PODS_PATH } from './objects.js';
import type { Kind, PodRec } from './pod.js';

interface PodObj {
  metadata?: { name?: string; creationTimestamp?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: { type?: string; lastTransitionTime?: string }[] };
}

export interface Counts {
  created: number;
  bound: number;
  running: number;
}

export class PodWatch {
  readonly recs = new Map<string, PodRec>();
  readonly counts: Record<Kind, Counts> = {
    fill: { created: 0, bound: 0, running: 0 },
    churn: { created: 0, bound: 0, running: 0 },
  };
  onRunning: ((name: string, r: PodRec) => void) | null = null;
  failed: Error | null = null;
  relists = 0;
  private watch: ResumableWatch | null = null;

  constructor(
    private readonly kc: KubeConfig,
    private readonly raw: Raw,
  ) {}

  async start(): Promise<void> {
    const rv = await this.list(false);
    this.watch = new ResumableWatch(this.kc, PODS_PATH, {}, rv, {
      event: (type, obj) => {
        if (type !== 'DELETED') this.note(obj as PodObj, false);
      },
      expired: () => {
        void this.relist();
      },
    });
  }

  stop(): void {
    this.watch?.stop();
  }

  add(name: string, kind: Kind): void {
    this.recs.set(name, { kind, created: performance.now() });
    this.counts[kind].created++;
  }

  private async relist(): Promise<void> {
    this.relists++;
    log('the pod watch expired (this process read too slowly); relisting, some times will be late');
    try {
      this.watch?.restart(await this.list(true));
    } catch (e) {
      this.failed = asError(e);
    }
  }

  /** Every pod of the namespace, noted when `note`; answers the list's resourceVersion. */
  private list(note: boolean): Promise<string> {
    return eachPage(this.raw, PODS_PATH, '', undefined, (items) => {
      if (note) for (const p of items as PodObj[]) this.note(p, true);
    });
  }

  private note(p: PodObj, late: boolean): void {
    const name = p.metadata?.name ?? '';
    const r = this.recs.get(name);
    if (!r) return;
    const now = performance.now();
    if (r.bound === undefined && p.spec?.nodeName) {
      r.bound = now;
      this.counts[r.kind].bound++;
    }
    if (r.running === undefined && p.status?.phase === 'Running') {
      r.running = now;
      if (late) r.late = true;
      this.counts[r.kind].running++;
      const ready = p.status.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime;
      const created = p.metadata?.creationTimestamp;
      if (ready && created) r.serverS = (Date.parse(ready) - Date.parse(created)) / 1000;
      this.onRunning?.(name, r);
    }
  }
}
