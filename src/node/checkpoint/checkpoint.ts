import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseChecked, withChecksum, writeDurably } from '../durable/file.js';
import { FakegpuError } from '../../errors.js';

/**
 * What this node has prepared, per claim UID, so unprepare works after a restart or after the claim was
 * deleted. PrepareStarted marks work that may be half done, and carries what that work meant to make
 * (a MIG placement) before any of it exists, so a restart can undo it; PrepareCompleted is returned as
 * is. Changes are made in memory and written whole (fsync, rename, fsync of the folder) by `flush` or,
 * grouped, by `durable`; the lifecycle answers the kubelet only after that.
 */
const MigInstance = z.strictObject({
  parentUuid: z.string(),
  /** The placement asked for, recorded before the GPU instance is created. */
  profileId: z.number().int().optional(),
  start: z.number().int().optional(),
  /** Known once created. */
  gpuInstanceId: z.number().int().optional(),
  computeInstanceId: z.number().int().optional(),
});
export type MigInstance = z.infer<typeof MigInstance>;

const PreparedDevice = z.strictObject({
  requestNames: z.array(z.string()),
  poolName: z.string(),
  deviceName: z.string(),
  cdiDeviceIds: z.array(z.string()),
  /** The device's identity: GPU or MIG UUID, a NIC's PCI address; empty for a MIG device not yet made. */
  uuid: z.string(),
  type: z.enum(['gpu', 'mig', 'vfio', 'nic', 'channel', 'daemon']),
  /** Prepared with admin access: holds nothing, so it never counts as another claim's (NVIDIA's GetNonAdminDevices). */
  adminAccess: z.literal(true).optional(),
  /** A MIG device made at prepare (dynamic MIG), destroyed at unprepare. */
  migInstance: MigInstance.optional(),
  /** An IMEX channel or daemon: its domain as prepare found it, so files and unprepare need no API. */
  computeDomain: z
    .strictObject({
      uid: z.string(),
      name: z.string(),
      namespace: z.string(),
      cliqueID: z.string(),
      allocationMode: z.string().optional(),
    })
    .optional(),
});
export type PreparedDevice = z.infer<typeof PreparedDevice>;

const PreparedClaim = z.strictObject({
  namespace: z.string(),
  name: z.string(),
  state: z.enum(['PrepareStarted', 'PrepareCompleted']),
  /** A template claim's entry in its pod (KEP-5304's metadata path names it). */
  podClaimName: z.string().optional(),
  devices: z.array(PreparedDevice),
  /** Sharing settings applied, per device, as the real driver records them. */
  configState: z.record(
    z.string(),
    z.strictObject({
      timeSlice: z.string().optional(),
      mps: z.boolean().optional(),
      /** A VFIO device's normalised VfioDeviceConfig: its CDI edits are rewritten from it at restart. */
      iommu: z
        .strictObject({
          backendPolicy: z.enum(['LegacyOnly', 'PreferIommuFD']),
          enableAPIDevice: z.boolean(),
        })
        .optional(),
      /** With consumable shares: the device's normalised config, which a claim sharing it must equal. */
      config: z.string().optional(),
    }),
  ),
});
export type PreparedClaim = z.infer<typeof PreparedClaim>;

const CheckpointFile = z.strictObject({
  version: z.union([z.literal(1), z.literal(2)]),
  nodeBootId: z.string(),
  preparedClaims: z.record(z.string(), PreparedClaim),
});
export type Checkpoint = z.infer<typeof CheckpointFile>;

/** How to start over, said wherever a checkpoint is refused. */
export const RESET_HINT =
  'restart with --reset-checkpoint (env FAKEGPU_RESET_CHECKPOINT=true, chart value plugin.resetCheckpoint) to start empty; prepared claims are forgotten and what they held is swept';

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

export class CheckpointStore {
  private data: Checkpoint;
  /** Changed in memory since the last write. */
  private dirty = false;
  /** The write that will cover every change made before it runs. */
  private pending: Promise<void> | null = null;

  /** Why the file on disk was set aside for an empty checkpoint (`reset`), if it was. */
  readonly resetFrom: string | null = null;

  /**
   * Loads the file. A damaged one stops the plugin with one line, unless `reset` says to start empty
   * instead; a good one is kept even then, so a reset left switched on in a DaemonSet costs nothing.
   */
  constructor(
    readonly path: string,
    reset = false,
  ) {
    this.data = { version: 2, nodeBootId: bootId(), preparedClaims: {} };
    if (!existsSync(path)) {
      this.save();
      return;
    }
    try {
      this.load();
    } catch (e) {
      if (!reset || !(e instanceof FakegpuError)) throw e;
      this.resetFrom = e.detail;
      this.data = { version: 2, nodeBootId: bootId(), preparedClaims: {} };
      this.save();
    }
  }

  private load(): void {
    const path = this.path;
    const checked = parseChecked(readFileSync(path, 'utf8'));
    if (!checked.ok) throw new FakegpuError(path, `the checkpoint is ${checked.why}; ${RESET_HINT}`);
    const parsed = CheckpointFile.safeParse(checked.data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new FakegpuError(
        path,
        `the checkpoint is malformed (${issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid'}); ${RESET_HINT}`,
      );
    }
    // Version 1 predates the checksum; anything later without one was damaged or hand-made.
    if (parsed.data.version !== 1 && !checked.checksummed)
      throw new FakegpuError(path, `the checkpoint has no checksum; ${RESET_HINT}`);
    // After a reboot nothing prepared survives (CDI specs live on tmpfs, pods are gone), as the real driver assumes.
    if (parsed.data.nodeBootId === this.data.nodeBootId) this.data = { ...parsed.data, version: 2 };
    if (parsed.data.version !== 2 || parsed.data.nodeBootId !== this.data.nodeBootId) this.save();
  }

  get(uid: string): PreparedClaim | undefined {
    return this.data.preparedClaims[uid];
  }

  all(): [string, PreparedClaim][] {
    return Object.entries(this.data.preparedClaims);
  }

  /** The completed claim other than `uid` that holds the device, if any: devices are exclusive. */
  holder(device: string, uid: string): string | undefined {
    return this.all().find(
      ([other, c]) =>
        other !== uid &&
        c.state === 'PrepareCompleted' &&
        c.devices.some((d) => d.deviceName === device && !d.adminAccess),
    )?.[0];
  }

  /** Changes the record in memory; `flush` or `durable` puts it on disk. */
  put(uid: string, claim: PreparedClaim): void {
    this.data.preparedClaims[uid] = claim;
    this.dirty = true;
  }

  delete(uid: string): void {
    if (!(uid in this.data.preparedClaims)) return;
    const { [uid]: _gone, ...rest } = this.data.preparedClaims;
    this.data.preparedClaims = rest;
    this.dirty = true;
  }

  /** Writes every change now: before making what a record describes (a MIG instance). */
  flush(): void {
    if (!this.dirty) return;
    // Clean only once written: a failed write (a full disk) must fail the next `durable()` too.
    this.save();
    this.dirty = false;
  }

  /**
   * Resolves once every change made so far is on disk. Changes made in the same turn of the event loop
   * share one write (group commit): ten claims prepared at once cost one fsync of the checkpoint, not
   * ten, and none of them is acknowledged before it.
   */
  durable(): Promise<void> {
    if (!this.dirty) return this.pending ?? Promise.resolve();
    this.pending ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        this.pending = null;
        try {
          this.flush();
          resolve();
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      });
    });
    return this.pending;
  }

  private save(): void {
    writeDurably(this.path, withChecksum(this.data), { mode: 0o600 });
  }
}
