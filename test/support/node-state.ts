import { gatesWith, type FeatureGates } from '../../src/model/feature-gates/gates.js';
import { join } from 'node:path';
import { pino } from 'pino';
import type { PluginOptions } from '../../src/node/plugin/run.js';
import { CheckpointStore } from '../../src/node/checkpoint/checkpoint.js';
import { FileMigStateStore } from '../../src/node/nvml/state-file.js';
import type { ResourceClaim } from '../../src/kube/types/claim.js';
import { DeviceState } from '../../src/node/prepare/state.js';
import { resolveProfile } from '../../src/process/profile-file.js';
import type { DriverRelease } from '../../src/model/device/release.js';
import { modelNode } from '../../src/model/render.js';

/**
 * A node's GPU side as the plugin builds it, over one folder: checkpoint, NVML's MIG state on disk,
 * CDI specs and views, so a second process (or a second start) sees what the first left.
 */
export const NODE = 'node-a';

export function nodeState(
  root: string,
  profile = 'dgx-h100',
  dynamicMig = true,
  release: DriverRelease = '0.5',
) {
  const model = modelNode(resolveProfile(profile), {
    nodeName: NODE,
    dynamicMig,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release,
    migState: () => new FileMigStateStore(join(root, 'state', 'nvml-state.json')),
  });
  const opts = {
    driverName: 'gpu.nvidia.com',
    nodeName: NODE,
    cdiRoot: join(root, 'cdi'),
    stateDir: join(root, 'state'),
    gates: gatesWith({ TimeSlicingSettings: true, MPSSupport: true }),
    release,
  };
  const checkpoint = new CheckpointStore(join(root, 'state', 'checkpoint.json'));
  const state = new DeviceState(model.machine, model.nvml, model.devices, checkpoint, opts);
  return { model, opts, checkpoint, state };
}

/** A plain DGX H100-like node's model (no MIG state on disk) with these gates, as prepare tests take it. */
export function gatedModel(gates: FeatureGates, profile = 'dgx-h100') {
  return modelNode(resolveProfile(profile), {
    nodeName: NODE,
    dynamicMig: false,
    driverName: 'gpu.nvidia.com',
    kubernetesVersion: { major: 1, minor: 37, patch: 0 },
    release: '0.5',
    gates,
  });
}

export function gpuClaim(uid: string, devices: string[], adminAccess = false): ResourceClaim {
  return {
    metadata: { name: `claim-${uid}`, namespace: 'default', uid },
    status: {
      allocation: {
        devices: {
          results: devices.map((device) => ({
            request: 'gpus',
            driver: 'gpu.nvidia.com',
            pool: NODE,
            device,
            ...(adminAccess ? { adminAccess } : {}),
          })),
        },
      },
    },
  };
}

/** The plugin's options for a DGX H100 `NODE` over `root` (the folders `nodeState` uses), quiet. */
export function pluginOptions(root: string, kubeconfig: string): PluginOptions {
  return {
    nodeName: NODE,
    profile: resolveProfile('dgx-h100'),
    dynamicMig: false,
    driverName: 'gpu.nvidia.com',
    release: '0.5',
    kubeletPluginsDir: join(root, 'plugins'),
    kubeletRegistrarDir: join(root, 'registry'),
    cdiRoot: join(root, 'cdi'),
    stateDir: join(root, 'state'),
    kubeconfig,
    httpEndpoint: '',
    gates: gatesWith({ TimeSlicingSettings: true, MPSSupport: true }),
    resetCheckpoint: false,
    log: pino({ level: 'silent' }),
  };
}
