import { FakegpuError } from '../../errors.js';
import { NVML_GPU_FABRIC_STATE, NVML_RETURN, type Nvml, NvmlError } from '../nvml/types.js';

/**
 * The node's NVLink clique as NVIDIA's compute-domain plugin reads it from NVML: `<clusterUUID>.<cliqueId>`
 * when every GPU reports the same registered fabric; null where GPUs have none (NOT_SUPPORTED, or an
 * all-zero cluster UUID). A fabric still registering, or GPUs that disagree, is an error: the real
 * plugin (strict mode, `CrashOnNVLinkFabricErrors`) refuses to start.
 */
const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

export function nodeClique(nvml: Nvml): string | null {
  const ids = new Set<string>();
  for (let i = 0; i < nvml.deviceGetCount(); i++) {
    const d = nvml.deviceGetHandleByIndex(i);
    let info;
    try {
      info = d.getGpuFabricInfo();
    } catch (e) {
      if (e instanceof NvmlError && e.code === NVML_RETURN.ERROR_NOT_SUPPORTED) return null;
      throw e;
    }
    if (info.state !== NVML_GPU_FABRIC_STATE.COMPLETED || info.status !== 0)
      throw new FakegpuError(
        'NVML',
        `GPU ${d.getUUID()}: NVLink fabric not ready (state ${info.state}, status ${info.status})`,
      );
    if (info.clusterUuid === ZERO_UUID) return null;
    ids.add(cliqueOf(info));
  }
  if (ids.size > 1)
    throw new FakegpuError('NVML', `the GPUs report different cliques: ${[...ids].join(', ')}`);
  return [...ids][0] ?? null;
}

/** NVIDIA's clique ID, as the node label `nvidia.com/gpu.clique` and ComputeDomain status carry it. */
export function cliqueOf(f: { clusterUuid: string; cliqueId: number }): string {
  return `${f.clusterUuid}.${f.cliqueId}`;
}
