import { findModel, GPU_MODELS } from '../catalog/index.js';
import type { GpuModel, Source } from '../catalog/types.js';
import { FakegpuError, show } from '../../errors.js';
import type { CustomModel, ProfileSpec } from '../preset/machine-spec.js';

/**
 * The GPU models a profile can name: its own `models` (GPUs the catalog does not have, as `capture node`
 * writes them), then the catalog. A custom model has no MIG and none of the catalog's sources: each of
 * its facts is what the capture showed, the rest is marked as a default.
 */
export type ModelLookup = (keyOrName: string, field: string) => GpuModel;

const captured: Source = { ref: 'profile', confirmed: false, note: 'a custom model of the profile' };
/** Where nvidia-smi -q -x leaves a fact out, the model takes a middle-of-the-range default. */
const DEFAULT_SMS = 100;
const DEFAULT_POWER_W = 400;

function customModel(m: CustomModel): GpuModel {
  const [major = 0, minor = 0] = m.computeCapability.split('.').map(Number);
  const hex = (s: string): number => Number.parseInt(s.replace(/^0x/, ''), 16);
  return {
    key: m.key,
    name: m.name,
    brand: /^Tesla /.test(m.name) ? 'Tesla' : 'Nvidia',
    architecture: m.architecture,
    computeCapability: [major, minor],
    memoryMiB: m.memoryMiB,
    pciDeviceId: hex(m.pciDeviceId),
    pciSubsystemId: m.pciSubsystemId === undefined ? 0 : hex(m.pciSubsystemId),
    multiprocessors: m.multiprocessors ?? DEFAULT_SMS,
    powerLimitW: m.powerLimitW ?? DEFAULT_POWER_W,
    provenance: {
      name: captured,
      brand: captured,
      architecture: captured,
      computeCapability: captured,
      memoryMiB: captured,
      pciDeviceId: captured,
      pciSubsystemId: captured,
      multiprocessors: captured,
      powerLimitW: captured,
    },
  };
}

export function modelLookup(spec: Pick<ProfileSpec, 'models'>): ModelLookup {
  const own = new Map<string, GpuModel>();
  (spec.models ?? []).forEach((m, i) => {
    const field = `spec.models[${i}]`;
    for (const alias of [m.key, m.name]) {
      const clash = GPU_MODELS.find((c) =>
        [c.key, c.name].some((x) => x.toLowerCase() === alias.toLowerCase()),
      );
      if (clash)
        throw new FakegpuError(
          `${field}.${alias === m.key ? 'key' : 'name'}`,
          `${show(alias)} is the catalog's ${clash.key}; name the catalog model in gpus[].model instead`,
        );
      if (own.has(alias.toLowerCase()))
        throw new FakegpuError(`${field}.key`, `${show(alias)} is defined twice in spec.models`);
    }
    const model = customModel(m);
    own.set(m.key.toLowerCase(), model);
    own.set(m.name.toLowerCase(), model);
  });
  return (keyOrName, field) => own.get(keyOrName.trim().toLowerCase()) ?? findModel(keyOrName, field);
}
