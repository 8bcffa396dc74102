import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { FakegpuError } from '../errors.js';

/**
 * What this node has prepared, per claim UID, so unprepare works after a restart or after the claim was
 * deleted. PrepareStarted marks work that may be half done; PrepareCompleted is returned as is.
 */
const PreparedDevice = z.strictObject({
  requestNames: z.array(z.string()),
  poolName: z.string(),
  deviceName: z.string(),
  cdiDeviceIds: z.array(z.string()),
  /** The device's identity: GPU or MIG UUID, a NIC's PCI address. */
  uuid: z.string(),
  type: z.enum(['gpu', 'mig', 'nic']),
  /** A MIG device created at prepare (dynamic MIG), destroyed at unprepare. */
  migInstance: z
    .strictObject({
      parentUuid: z.string(),
      gpuInstanceId: z.number().int(),
      computeInstanceId: z.number().int(),
    })
    .optional(),
});
export type PreparedDevice = z.infer<typeof PreparedDevice>;

const PreparedClaim = z.strictObject({
  namespace: z.string(),
  name: z.string(),
  state: z.enum(['PrepareStarted', 'PrepareCompleted']),
  devices: z.array(PreparedDevice),
  /** Sharing settings applied, per device, as the real driver records them. */
  configState: z.record(
    z.string(),
    z.strictObject({ timeSlice: z.string().optional(), mps: z.boolean().optional() }),
  ),
});
export type PreparedClaim = z.infer<typeof PreparedClaim>;

const CheckpointFile = z.strictObject({
  version: z.literal(1),
  nodeBootId: z.string(),
  preparedClaims: z.record(z.string(), PreparedClaim),
});
export type Checkpoint = z.infer<typeof CheckpointFile>;

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

export class CheckpointStore {
  private data: Checkpoint;

  /** Loads the file; a corrupt one stops the plugin unless `reset` says to start empty. */
  constructor(
    readonly path: string,
    reset = false,
  ) {
    this.data = { version: 1, nodeBootId: bootId(), preparedClaims: {} };
    if (reset || !existsSync(path)) {
      this.save();
      return;
    }
    let parsed: ReturnType<typeof CheckpointFile.safeParse>;
    try {
      parsed = CheckpointFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    } catch (e) {
      throw new FakegpuError(
        path,
        `the checkpoint is not valid JSON (${e instanceof Error ? e.message : String(e)}); restart with --reset-checkpoint to start empty (prepared claims are forgotten)`,
      );
    }
    if (!parsed.success) {
      throw new FakegpuError(
        path,
        `the checkpoint is malformed (${parsed.error.issues[0]?.message ?? 'invalid'}); restart with --reset-checkpoint to start empty (prepared claims are forgotten)`,
      );
    }
    // After a reboot nothing prepared survives (CDI specs live on tmpfs, pods are gone), as the real driver assumes.
    if (parsed.data.nodeBootId === this.data.nodeBootId) this.data = parsed.data;
    else this.save();
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
        other !== uid && c.state === 'PrepareCompleted' && c.devices.some((d) => d.deviceName === device),
    )?.[0];
  }

  put(uid: string, claim: PreparedClaim): void {
    this.data.preparedClaims[uid] = claim;
    this.save();
  }

  delete(uid: string): void {
    if (!(uid in this.data.preparedClaims)) return;
    const { [uid]: _gone, ...rest } = this.data.preparedClaims;
    this.data.preparedClaims = rest;
    this.save();
  }

  private save(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(this.data, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, this.path);
  }
}
