import { specKey, type PublishedSlice, type StoredSlice } from '../kube/publish/pool.js';

/**
 * What the fleet knows of the slices on the API server: a key per slice (never the object), indexed by
 * node so that a node's reconcile looks at its own slices, not all N nodes'. A slice leaves the index
 * only when the API server says it is gone (a delete answered, a DELETED event, a relist without it):
 * one forgotten earlier would never be deleted again.
 */
export interface SliceState {
  node: string;
  driver: string;
  /** `specKey` of its spec; '' when unknown (changed by someone else), so that it is written again. */
  key: string;
  generation: number;
  /** Its resourceVersion when recorded: the watch event of our own write then costs nothing. */
  rv: string | undefined;
}

export class SliceIndex {
  private readonly slices = new Map<string, SliceState>();
  private readonly byNode = new Map<string, Set<string>>();

  get size(): number {
    return this.slices.size;
  }

  get(name: string): SliceState | undefined {
    return this.slices.get(name);
  }

  clear(): void {
    this.slices.clear();
    this.byNode.clear();
  }

  /** A slice as listed. */
  recordStored(s: StoredSlice): void {
    const name = s.metadata.name;
    if (!name) return;
    this.record(name, {
      node: s.spec.nodeName,
      driver: s.spec.driver,
      key: specKey(s.spec),
      generation: s.spec.pool.generation,
      rv: s.metadata.resourceVersion,
    });
  }

  record(name: string, state: SliceState): void {
    this.forget(name);
    this.slices.set(name, state);
    let names = this.byNode.get(state.node);
    if (!names) this.byNode.set(state.node, (names = new Set()));
    names.add(name);
  }

  forget(name: string): void {
    const old = this.slices.get(name);
    if (!old) return;
    this.slices.delete(name);
    const names = this.byNode.get(old.node);
    names?.delete(name);
    if (names?.size === 0) this.byNode.delete(old.node);
  }

  /** The node's slices of one driver, as planning wants them. */
  of(node: string, driver: string): PublishedSlice[] {
    const out: PublishedSlice[] = [];
    for (const name of this.byNode.get(node) ?? []) {
      const x = this.slices.get(name);
      if (x?.driver === driver) out.push({ name, key: x.key, generation: x.generation });
    }
    return out;
  }
}
