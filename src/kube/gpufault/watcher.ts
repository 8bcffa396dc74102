import type { Logger } from 'pino';
import { ApiError } from '../client.js';
import { ListWatch } from '../list-watch.js';
import type { FaultApi } from './api.js';
import {
  checkGpuFault,
  faultPhase,
  GPUFAULT_CRD,
  GPUFAULTS_PATH,
  type GpuFault,
} from '../../model/fault/resource.js';

export interface FaultWatcherOptions {
  api: Pick<FaultApi, 'listFaults' | 'watch'>;
  /** The valid faults, by name, after the first list, after changes, and when one's phase changes. */
  onChange(faults: GpuFault[]): void;
  /** A fault that does not parse (`why`: `spec.fault.xid: ...`), once per object version and reason. */
  onInvalid?(name: string, why: string, obj: unknown): void;
  /** A fault whose status alone changed (no onChange for that), e.g. for `summaryPatch`. */
  onStatus?(fault: GpuFault): void;
  log: Logger;
  /** Changes that come together (a relist, a burst of creates) are reported once, this long after the first. */
  debounceMs?: number;
  /** How often to look again for a CRD that is not installed. */
  absentRetryMs?: number;
  now?: () => Date;
  random?: () => number;
}

/** Node's timers hold at most 2^31-1 ms; a fault repaired in a year is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The GpuFaults of the cluster, kept by a `ListWatch` (relisting on 410), for the plugin
 * and the fleet. A fault that does not parse is reported and otherwise ignored; a cluster without the
 * CRD is logged once and looked at again slowly; nothing here throws into the caller.
 */
export class FaultWatcher {
  private faults = new Map<string, GpuFault>();
  /** What each fault was last reported invalid for, so that a status write does not report it again. */
  private readonly invalid = new Map<string, string>();
  private readonly lw: ListWatch;
  private stopped = false;
  private wasListed = false;
  private absentLogged = false;
  private emitTimer: NodeJS.Timeout | undefined;
  private phaseTimer: NodeJS.Timeout | undefined;
  private readonly now: () => Date;
  private readonly random: () => number;

  constructor(private readonly o: FaultWatcherOptions) {
    this.now = o.now ?? (() => new Date());
    this.random = o.random ?? Math.random;
    this.lw = this.listWatch();
  }

  /** Lists, then watches; returns at once. */
  start(): void {
    void this.lw.start();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.emitTimer);
    clearTimeout(this.phaseTimer);
    this.lw.stop();
  }

  /** The valid faults now, by name. */
  current(): GpuFault[] {
    return [...this.faults.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  }

  private listWatch(): ListWatch {
    let items: unknown[] = [];
    return new ListWatch({
      source: this.o.api,
      what: 'GpuFaults',
      log: this.o.log,
      random: this.random,
      collections: [
        {
          path: GPUFAULTS_PATH,
          list: (q) => this.o.api.listFaults(q),
          page: (objs) => {
            items = items.concat(objs);
          },
          event: (type, obj) => {
            this.event(type, obj);
          },
        },
      ],
      listing: () => {
        items = [];
      },
      listed: () => {
        this.takeList(items);
        items = [];
      },
      listFailed: (e) => this.listFailed(e),
      // The CRD went away under the watch: back to listing, which waits for it.
      watchFailed: (e) => (e instanceof ApiError && e.code === 404 ? 'relist' : undefined),
    });
  }

  /** A whole list: the faults it holds replace the ones known, and what changed is reported. */
  private takeList(items: unknown[]): void {
    if (this.absentLogged) this.o.log.info({ crd: GPUFAULT_CRD }, 'GpuFault CRD found; reading faults');
    this.absentLogged = false;
    const before = this.faults;
    this.faults = new Map();
    const names = new Set<string>();
    for (const obj of items) {
      const name = nameIn(obj);
      if (name === null) continue;
      names.add(name);
      this.read(name, obj);
    }
    for (const n of this.invalid.keys()) if (!names.has(n)) this.invalid.delete(n);
    let changed = !this.wasListed || before.size !== this.faults.size;
    for (const [name, f] of this.faults) {
      const prev = before.get(name);
      if (!prev || identity(prev) !== identity(f)) changed = true;
      else if (prev.metadata.resourceVersion !== f.metadata.resourceVersion) this.o.onStatus?.(f);
    }
    this.wasListed = true;
    if (changed) this.schedule();
  }

  /** No CRD (or not yet) is not an error of this process: the cluster may install it later. */
  private listFailed(e: unknown): number | undefined {
    if (!(e instanceof ApiError && e.code === 404)) return undefined;
    const delay = this.o.absentRetryMs ?? 30_000;
    if (!this.absentLogged)
      this.o.log.warn(
        { crd: GPUFAULT_CRD, retryInMs: delay },
        'GpuFault CRD not installed; no faults until it is',
      );
    this.absentLogged = true;
    this.forgetAll();
    return delay;
  }

  private event(type: string, obj: unknown): void {
    const name = nameIn(obj);
    if (name === null) return;
    if (type === 'DELETED') {
      this.invalid.delete(name);
      if (this.faults.delete(name)) this.schedule();
      return;
    }
    const prev = this.faults.get(name);
    const f = this.read(name, obj);
    if (!f) {
      if (prev) this.schedule();
      return;
    }
    if (!prev || identity(prev) !== identity(f)) this.schedule();
    else this.o.onStatus?.(f);
  }

  /** Parses and keeps (or drops) one object; answers the fault if it is one. */
  private read(name: string, obj: unknown): GpuFault | null {
    const r = checkGpuFault(obj);
    if ('fault' in r) {
      this.invalid.delete(name);
      this.faults.set(name, r.fault);
      return r.fault;
    }
    this.faults.delete(name);
    const why = `${r.field}: ${r.detail}`;
    const m = (obj as { metadata?: { uid?: unknown; generation?: unknown } }).metadata;
    const key = `${String(m?.uid)}/${String(m?.generation)}/${why}`;
    if (this.invalid.get(name) !== key) {
      this.invalid.set(name, key);
      this.o.log.warn({ fault: name, why }, 'GpuFault ignored');
      try {
        this.o.onInvalid?.(name, why, obj);
      } catch (e) {
        this.o.log.error(
          { fault: name, err: e instanceof Error ? e.message : String(e) },
          'onInvalid failed',
        );
      }
    }
    return null;
  }

  private forgetAll(): void {
    this.invalid.clear();
    // No CRD is a known answer (no faults): the first time, it is reported like a first list.
    const first = !this.wasListed;
    this.wasListed = true;
    if (this.faults.size === 0 && !first) return;
    this.faults = new Map();
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped || this.emitTimer !== undefined) return;
    this.emitTimer = setTimeout(() => {
      this.emitTimer = undefined;
      this.emit();
    }, this.o.debounceMs ?? 100);
  }

  private emit(): void {
    if (this.stopped) return;
    try {
      this.o.onChange(this.current());
    } catch (e) {
      this.o.log.error({ err: e instanceof Error ? e.message : String(e) }, 'onChange failed');
    }
    this.armPhaseTimer();
  }

  /** One timer, at the next start or repair of any fault: phases change without an event. */
  private armPhaseTimer(): void {
    clearTimeout(this.phaseTimer);
    this.phaseTimer = undefined;
    const now = this.now();
    let next = Infinity;
    for (const f of this.faults.values()) {
      const at = faultPhase(f, now).nextChangeAt?.getTime();
      if (at !== undefined && at < next) next = at;
    }
    if (next === Infinity) return;
    const wait = Math.max(0, next - now.getTime()) + 1;
    this.phaseTimer = setTimeout(
      () => {
        this.phaseTimer = undefined;
        if (wait > MAX_TIMER_MS) this.armPhaseTimer();
        else this.schedule();
      },
      Math.min(wait, MAX_TIMER_MS),
    );
  }
}

function nameIn(obj: unknown): string | null {
  const name = (obj as { metadata?: { name?: unknown } } | null)?.metadata?.name;
  return typeof name === 'string' && name !== '' ? name : null;
}

/** What the caller acts on: a status write alone (ours included) is no change. */
function identity(f: GpuFault): string {
  return `${f.metadata.uid ?? ''}\n${JSON.stringify(f.spec)}`;
}
