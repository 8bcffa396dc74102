import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { CdiSpec } from '../cdi/spec.js';
import { listSpecs, removeSpec, writeSpec } from '../cdi/write.js';
import type { CheckpointStore, PreparedClaim, PreparedDevice } from '../checkpoint/checkpoint.js';
import { removeDurably } from '../durable/file.js';
import { under } from '../durable/path.js';
import { checkClaimUid, claimString, type ResourceClaim } from '../../kube/types/claim.js';
import { crashPoint } from './crash.js';
import { ClaimError, ClaimRefused, PrepareError, Serial } from './node.js';

/**
 * One claim lifecycle for every driver on the node (GPUs, NICs): the checkpoint, one call at a time,
 * restore and sweep at start, forget at unprepare. A driver says only what is its own through hooks.
 *
 * The order of steps is what makes a kill -9 at any line harmless. Prepare records the claim's intent
 * (PrepareStarted, with the MIG placements it will make) on disk before making anything, makes it,
 * writes the CDI spec and views, and records PrepareCompleted; the kubelet hears of it only once that
 * record is on disk. Undoing runs the other way: instances, then files, then the record last. A
 * restart rolls back every PrepareStarted record, rewrites the files of completed ones in place, and
 * sweeps what no record holds.
 */

export interface ClaimHooks {
  /** CDI kind of this driver's specs. */
  readonly cdiKind: string;
  /** What this driver puts between the claim and the cause in its error strings. */
  readonly errorPrefix: string;
  /** The whole error string, for a driver whose wording differs (quotes, prefix). */
  failure?(claim: { namespace: string; name: string; uid: string }, cause: string): string;
  /**
   * Checks the allocation and decides the devices and their config; changes nothing on the node.
   * `others`: the other claims prepared completely, as the checkpoint has them (shared devices).
   */
  plan(
    claim: ResourceClaim,
    heldBy: (device: string) => string | undefined,
    others: readonly Holding[],
  ): PreparedClaim;
  /**
   * Makes what the devices need and the node does not have yet (dynamic MIG), calling `record` with
   * the devices as they now are after each thing made, so the checkpoint always knows it.
   */
  apply(
    devices: PreparedDevice[],
    record: (devices: PreparedDevice[]) => void,
    others: readonly Holding[],
  ): PreparedDevice[];
  /**
   * Destroys what `apply` made, whatever it got to; what is already gone is no error. What `others`
   * (the other completed claims) still hold stays.
   */
  undo(devices: readonly PreparedDevice[], others: readonly Holding[]): void;
  /** Writes the claim's views under `dir` in place and returns its CDI spec (null: none). */
  files(uid: string, claim: PreparedClaim, dir: string): CdiSpec | null;
  /** Whether this machine still has the device as recorded (a relabelled node may not). */
  has(device: PreparedDevice): boolean;
  /** Destroys instances that none of `held` records; returns how many. */
  sweepInstances(held: readonly PreparedDevice[]): number;
}

/** Another claim the checkpoint has as prepared completely: NVIDIA's driver rescans these each time. */
export interface Holding {
  uid: string;
  claim: PreparedClaim;
}

/** A plan for devices that need no settings recorded (NICs, IMEX channels and daemons). */
export function plannedClaim(claim: ResourceClaim, devices: PreparedDevice[]): PreparedClaim {
  return {
    namespace: claim.metadata.namespace,
    name: claim.metadata.name,
    state: 'PrepareStarted',
    devices,
    configState: {},
  };
}

export interface LifecycleOptions {
  cdiRoot: string;
  /** Views go to `<stateDir>/claims/<uid>`. */
  stateDir: string;
}

/** What a start found: completed claims whose devices are gone, and what no record held, by kind. */
export interface Restored {
  stale: string[];
  rolledBack: string[];
  swept: { cdiSpecs: number; views: number; instances: number };
}

export class ClaimLifecycle {
  private readonly serial = new Serial();

  constructor(
    protected readonly checkpoint: CheckpointStore,
    private readonly hooks: ClaimHooks,
    private readonly where: LifecycleOptions,
  ) {}

  /** Finishes or undoes what a crash left, then sweeps; call once at start, before serving. */
  restore(): Restored {
    const out = this.restoreNow();
    this.checkpoint.flush();
    return out;
  }

  private restoreNow(): Restored {
    const out: Restored = { stale: [], rolledBack: [], swept: { cdiSpecs: 0, views: 0, instances: 0 } };
    for (const [uid, c] of this.checkpoint.all()) {
      if (checkClaimUid(uid) !== null) {
        // No path can be built from it; drop the record, the sweep takes whatever it made.
        this.checkpoint.delete(uid);
      } else if (c.state !== 'PrepareCompleted') {
        this.forget(uid);
        out.rolledBack.push(uid);
      } else if (c.devices.every((d) => this.hooks.has(d))) {
        this.writeFiles(uid, c);
      } else {
        // The machine changed under a prepared claim (another profile): keep the record so the
        // kubelet's unprepare still finds and cleans it, but write nothing for devices that are gone.
        out.stale.push(uid);
      }
    }
    out.swept = this.sweep();
    return out;
  }

  /**
   * Writes the files of every prepared claim again, in place, between calls: what containers see of
   * their devices changed (a GPU was lost). Files are derived state, so nothing is recorded.
   */
  refreshFiles(): Promise<void> {
    return this.serial.run(() => {
      for (const [uid, c] of this.checkpoint.all())
        if (c.state === 'PrepareCompleted' && c.devices.every((d) => this.hooks.has(d)))
          this.writeFiles(uid, c);
    });
  }

  /** Answers only once the checkpoint that records the claim is on disk. */
  async prepare(claim: ResourceClaim): Promise<PreparedDevice[]> {
    const devices = await this.serial.run(() => this.prepareNow(claim));
    await this.checkpoint.durable();
    crashPoint('prepare-completed');
    return devices;
  }

  async unprepare(uid: string): Promise<void> {
    await this.serial.run(() => {
      const bad = checkClaimUid(uid);
      if (bad) throw new PrepareError(bad);
      this.forget(uid);
    });
    await this.checkpoint.durable();
  }

  /** The UIDs of prepared claims, for metrics and tests. */
  held(): string[] {
    return this.checkpoint.all().map(([uid]) => uid);
  }

  private fail(claim: ResourceClaim, cause: string, refused = false): PrepareError {
    const m = claim.metadata;
    if (this.hooks.failure) return new PrepareError(this.hooks.failure(m, cause));
    const prefix = refused ? '' : this.hooks.errorPrefix;
    return new PrepareError(`error preparing devices for claim ${claimString(m)}: ${prefix}${cause}`);
  }

  private prepareNow(claim: ResourceClaim): PreparedDevice[] {
    const uid = claim.metadata.uid;
    const bad = checkClaimUid(uid);
    if (bad) throw new PrepareError(bad);
    const done = this.checkpoint.get(uid);
    if (done?.state === 'PrepareCompleted') {
      this.writeFiles(uid, done);
      return done.devices;
    }
    if (done) this.forget(uid);
    let planned: PreparedClaim;
    try {
      planned = this.hooks.plan(claim, (device) => this.checkpoint.holder(device, uid), this.others(uid));
    } catch (e) {
      if (e instanceof ClaimError) throw this.fail(claim, e.message, e instanceof ClaimRefused);
      throw e;
    }
    // What will be made on the node is on disk before any of it exists, so a restart can undo it. A
    // claim that makes nothing needs no such record: its files, if a crash left them, are swept.
    if (planned.devices.some((d) => d.migInstance)) {
      this.checkpoint.put(uid, planned);
      this.checkpoint.flush();
      crashPoint('prepare-started');
    }
    let devices: PreparedDevice[];
    try {
      devices = this.hooks.apply(
        planned.devices,
        (now) => {
          this.checkpoint.put(uid, { ...planned, devices: now });
        },
        this.others(uid),
      );
    } catch (e) {
      // Leave nothing half-applied: whatever was made for this claim goes again.
      this.forget(uid);
      if (e instanceof ClaimError) throw this.fail(claim, e.message);
      throw e;
    }
    const completed: PreparedClaim = { ...planned, state: 'PrepareCompleted', devices };
    this.writeFiles(uid, completed);
    crashPoint('files-written');
    this.checkpoint.put(uid, completed);
    return devices;
  }

  private claimDir(uid: string): string {
    return under(this.where.stateDir, 'claims', uid);
  }

  private writeFiles(uid: string, c: PreparedClaim): void {
    const spec = this.hooks.files(uid, c, this.claimDir(uid));
    if (spec) writeSpec(this.where.cdiRoot, uid, spec);
    else removeSpec(this.where.cdiRoot, uid, this.hooks.cdiKind);
  }

  /**
   * The other claims prepared completely, read from the checkpoint at each call: counting holders of a
   * shared device this way, as NVIDIA does, survives any restart (there is no counter to lose).
   */
  private others(uid: string): Holding[] {
    return this.checkpoint
      .all()
      .filter(([other, c]) => other !== uid && c.state === 'PrepareCompleted')
      .map(([other, c]) => ({ uid: other, claim: c }));
  }

  /** Undoes a claim whatever state it is in; each step is idempotent, and the record goes last. */
  private forget(uid: string): void {
    this.hooks.undo(this.checkpoint.get(uid)?.devices ?? [], this.others(uid));
    crashPoint('unprepare-undone');
    removeSpec(this.where.cdiRoot, uid, this.hooks.cdiKind);
    removeDurably(this.claimDir(uid));
    crashPoint('unprepare-files-removed');
    this.checkpoint.delete(uid);
  }

  /** CDI specs, views and instances that no record holds: left by a crash, or by a reset checkpoint. */
  private sweep(): Restored['swept'] {
    const held = new Set(this.held());
    const specs = listSpecs(this.where.cdiRoot, this.hooks.cdiKind);
    let cdiSpecs = 0;
    for (const [uid, path] of specs.uids) {
      if (held.has(uid)) continue;
      removeDurably(path);
      cdiSpecs++;
    }
    for (const path of specs.debris) {
      removeDurably(path);
      cdiSpecs++;
    }
    let views = 0;
    let dirs: string[] = [];
    try {
      dirs = readdirSync(join(this.where.stateDir, 'claims'));
    } catch {
      // No claim was ever prepared here.
    }
    for (const uid of dirs) {
      if (held.has(uid)) continue;
      removeDurably(join(this.where.stateDir, 'claims', uid));
      views++;
    }
    const instances = this.hooks.sweepInstances(this.checkpoint.all().flatMap(([, c]) => c.devices));
    return { cdiSpecs, views, instances };
  }
}
