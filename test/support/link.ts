import { setTimeout as sleep } from 'node:timers/promises';
import type { ListQuery } from '../../src/kube/api.js';
import { ApiError } from '../../src/kube/client.js';
import type { ObjectApi } from '../../src/kube/objects.js';
import type { FakeObjects } from './fake-objects.js';

/** One candidate's view of the store: it can be cut off (failing or hanging), and counts its writes. */
export class Link implements ObjectApi {
  mode: 'up' | 'fail' | 'hang' = 'up';
  readonly writes: string[] = [];
  /** Runs just before this candidate's next PUT reaches the store: a rival writing in between. */
  beforePut: (() => void) | null = null;
  /** Delays of this candidate's next GETs, each read from the store only once its delay has passed. */
  readonly getDelays: number[] = [];
  /** Runs just before a delayed GET reads the store. */
  onSlowRead: (() => void) | null = null;

  constructor(private readonly store: FakeObjects) {}

  private gate<T>(f: () => Promise<T>): Promise<T> {
    if (this.mode === 'fail') return Promise.reject(new ApiError(503, 'partitioned'));
    if (this.mode === 'hang') return new Promise<T>(() => undefined);
    return f();
  }

  list<T>(c: string, q?: ListQuery): Promise<T[]> {
    return this.gate(() => this.store.list<T>(c, q));
  }
  get<T>(p: string): Promise<T | null> {
    return this.gate(async () => {
      const delay = this.getDelays.shift();
      if (delay !== undefined) {
        await sleep(delay);
        this.onSlowRead?.();
      }
      return this.store.get<T>(p);
    });
  }
  create<T>(c: string, o: object): Promise<T> {
    return this.gate(() => {
      this.writes.push(`POST ${c}`);
      return this.store.create<T>(c, o);
    });
  }
  replace<T>(p: string, o: object): Promise<T> {
    return this.gate(() => {
      this.writes.push(`PUT ${p}`);
      const before = this.beforePut;
      this.beforePut = null;
      before?.();
      return this.store.replace<T>(p, o);
    });
  }
  patch<T>(p: string, o: object): Promise<T> {
    return this.gate(() => this.store.patch<T>(p, o));
  }
  delete(p: string, rv?: string): Promise<boolean> {
    return this.gate(() => {
      this.writes.push(`DELETE ${p}`);
      return this.store.delete(p, rv);
    });
  }
}
