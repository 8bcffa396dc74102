import { migDeviceName } from '../device/names.js';
import { migUuid } from '../hardware/identity.js';
import { deviceKey, type Attribution } from './attribution.js';
import type { GpuEntity, InstanceEntity } from './entities.js';
import { DRIVER_VERSION_LABEL, FIELDS } from './fields.js';
import { SeriesTable, type Style } from './exposition.js';
import { IDLE, valueAt, type Load } from './load.js';
import {
  boardUtil,
  gpuValues,
  instanceValues,
  powerW,
  type Health,
  type Reading,
  type Values,
} from './values.js';

/**
 * The exposition of many nodes' GPUs at one moment: each GPU or MIG instance's reading from the load of
 * the pod that holds it (idle when none does), its health, and the energy it has used so far. The energy
 * counter is the one piece of state: power integrated from one scrape to the next, per GPU.
 */

export interface NodeGpus {
  /** The node's name: the pool of its devices and the host label's value. */
  node: string;
  driverVersion: string;
  gpus: readonly GpuEntity[];
  health(uuid: string): Health;
}

export interface ExporterOptions {
  /** Which dcgm-exporter to look like (default `current`, 4.8.3 and later 4.8.x). */
  style?: Style;
  now?: () => number;
}

const reading = (a: Attribution | undefined, nowMs: number): Reading => {
  const load: Load = a?.load ?? IDLE;
  const t = a ? (nowMs - a.startedAtMs) / 1000 : 0;
  return { util: valueAt(load.util, t), memory: valueAt(load.memory, t) };
};

/** Rows walked between two pauses of a scrape: about a millisecond of work. */
const PAUSE_ROWS = 64;

export class DcgmExporter {
  /** By GPU UUID: energy so far (mJ) and when it was last brought up to date. */
  private readonly energy = new Map<string, { atMs: number; mJ: number }>();
  private readonly style: Style;
  /** 4.6.0-4.8.3 renamed `Hostname` to `hostname`. */
  private readonly hostLabel: string;
  private readonly now: () => number;

  constructor(o: ExporterOptions = {}) {
    this.style = o.style ?? 'current';
    this.hostLabel = this.style === 'current' ? 'hostname' : 'Hostname';
    this.now = o.now ?? (() => Date.now());
  }

  render(nodes: Iterable<NodeGpus>, attribution: ReadonlyMap<string, readonly Attribution[]>): string {
    return [...this.exposition(nodes, attribution)].join('');
  }

  /**
   * The exposition in pieces, for a server to send as it goes. Readings are all of one moment, taken as
   * the nodes are walked: between every `PAUSE_ROWS` rows an empty piece lets the server give the event
   * loop back, so that a scrape of 10,000 nodes does not hold up the fleet's publishing.
   */
  exposition(
    nodes: Iterable<NodeGpus>,
    attribution: ReadonlyMap<string, readonly Attribution[]>,
  ): Generator<string> {
    return this.pieces(nodes, attribution, this.now());
  }

  private *pieces(
    nodes: Iterable<NodeGpus>,
    attribution: ReadonlyMap<string, readonly Attribution[]>,
    nowMs: number,
  ): Generator<string> {
    const table = new SeriesTable(this.style, FIELDS);
    const seen = new Set<string>();
    let paused = 0;
    for (const n of nodes) {
      for (const g of n.gpus) {
        // A node deleted and added again while the walk pauses comes round twice; a series twice would
        // fail the whole scrape in Prometheus.
        if (seen.has(g.uuid)) continue;
        seen.add(g.uuid);
        this.gpuRows(n, g, attribution, nowMs, table);
      }
      if (table.rows - paused < PAUSE_ROWS) continue;
      paused = table.rows;
      yield '';
    }
    // GPUs gone (a node deleted, a pool shrunk) take their counters with them.
    for (const uuid of this.energy.keys()) if (!seen.has(uuid)) this.energy.delete(uuid);
    yield* table.text();
  }

  private energyOf(uuid: string, watts: number, nowMs: number): number {
    const e = this.energy.get(uuid);
    if (!e) {
      this.energy.set(uuid, { atMs: nowMs, mJ: 0 });
      return 0;
    }
    // Power held since the last scrape: W × ms = mJ. Scrapes walk their nodes side by side, each at its
    // own moment: one that began earlier must not move the clock back and count a span twice.
    e.mJ += watts * Math.max(0, nowMs - e.atMs);
    e.atMs = Math.max(e.atMs, nowMs);
    return e.mJ;
  }

  private gpuRows(
    n: NodeGpus,
    g: GpuEntity,
    attribution: ReadonlyMap<string, readonly Attribution[]>,
    nowMs: number,
    table: SeriesTable,
  ): void {
    const health = n.health(g.uuid);
    const identity = (i?: InstanceEntity): [string, string][] => [
      ['gpu', String(g.index)],
      ['UUID', g.uuid],
      ['pci_bus_id', g.busId],
      ['device', `nvidia${g.index}`],
      ['modelName', g.model.name],
      ...(i
        ? ([
            ['GPU_I_PROFILE', i.profile.name],
            ['GPU_I_ID', String(i.id)],
          ] as [string, string][])
        : []),
      [this.hostLabel, n.node],
    ];
    const driver: [string, string] = [DRIVER_VERSION_LABEL, n.driverVersion];
    if (!g.instances || g.instances.length === 0) {
      const as = attribution.get(deviceKey(n.node, g.device)) ?? [];
      const r = reading(as[0], nowMs);
      const mJ = this.energyOf(g.uuid, health.lost ? 0 : powerW(g, r.util), nowMs);
      const values = gpuValues(g, r, health, mJ);
      for (const a of as.length > 0 ? as : [undefined])
        table.add({ identity: identity(), extra: [driver, ...(a?.labels ?? [])], values });
      return;
    }
    const byInstance = g.instances.map((i) => {
      const as =
        attribution.get(deviceKey(n.node, migDeviceName(g.minor, i.profile.name, i.profile.id, i.start))) ??
        [];
      return { i, as, r: reading(as[0], nowMs) };
    });
    const util = boardUtil(g, new Map(byInstance.map(({ i, r }) => [i.id, r.util])));
    const mJ = this.energyOf(g.uuid, health.lost ? 0 : powerW(g, util), nowMs);
    const board = gpuValues(g, { util, memory: 0 }, health, mJ);
    for (const { i, as, r } of byInstance) {
      const own = instanceValues(i, r, health);
      const values: Values = {};
      for (const f of FIELDS) {
        const v = f.onInstance === 'own' ? own[f.name] : f.onInstance === 'gpu' ? board[f.name] : undefined;
        if (v !== undefined) values[f.name] = v;
      }
      const mig: [string, string][] = [
        ['dra_mig_device_uuid', migUuid(g.uuid, i.id, 0)],
        ['dra_mig_profile', i.profile.name],
      ];
      for (const a of as.length > 0 ? as : [undefined])
        table.add({ identity: identity(i), extra: [driver, ...(a ? [...a.labels, ...mig] : [])], values });
    }
  }
}
