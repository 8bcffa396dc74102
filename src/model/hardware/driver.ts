import { FakegpuError, show } from '../../errors.js';
import { parseLenientVersion } from '../../kube/types/version.js';

export const DEFAULT_DRIVER_VERSION = '580.126.20';

/**
 * CUDA driver API version each driver branch reports (`nvidia-smi` "CUDA Version"), from NVIDIA's
 * release notes. Used when a profile names a driver but not its CUDA version.
 */
const CUDA_BY_BRANCH: readonly (readonly [branch: number, cuda: string])[] = [
  [525, '12.0'],
  [530, '12.1'],
  [535, '12.2'],
  [545, '12.3'],
  [550, '12.4'],
  [555, '12.5'],
  [560, '12.6'],
  [565, '12.7'],
  [570, '12.8'],
  [575, '12.9'],
  [580, '13.0'],
  [590, '13.1'],
  [595, '13.2'],
];

export function cudaVersionForDriver(driverVersion: string, field: string): string {
  const { major } = parseLenientVersion(driverVersion, field);
  let found: string | undefined;
  for (const [branch, cuda] of CUDA_BY_BRANCH) if (major >= branch) found = cuda;
  if (!found) {
    throw new FakegpuError(
      field,
      `driver ${show(driverVersion)} is older than R525; give spec.driver.cudaVersion explicitly`,
    );
  }
  return found;
}

/**
 * The largest CUDA major version NVML can report: `nvmlSystemGetCudaDriverVersion` returns a C `int`
 * (2^31 - 1), major*1000 + minor*10.
 */
const MAX_CUDA_MAJOR = Math.floor((2 ** 31 - 1 - 90) / 1000);

/** `13.0` → 13000, the integer `nvmlSystemGetCudaDriverVersion` returns. */
export function cudaVersionToNvml(text: string, field: string): number {
  const m = /^(\d+)\.(\d)$/.exec(text.trim());
  if (!m)
    throw new FakegpuError(
      field,
      `${show(text)} is not a CUDA version; expected <major>.<minor>, e.g. "13.0"`,
    );
  if (Number(m[1]) > MAX_CUDA_MAJOR) {
    throw new FakegpuError(
      field,
      `${show(text)} is not a CUDA version NVML can report; the major must be at most ${MAX_CUDA_MAJOR} (NVML returns major*1000 + minor*10 as a 32-bit int), e.g. "13.0"`,
    );
  }
  return Number(m[1]) * 1000 + Number(m[2]) * 10;
}

/** `nvmlDeviceGetAddressingMode` exists from the R580 branch on. */
export function hasAddressingModeCall(driverVersion: string, field: string): boolean {
  return parseLenientVersion(driverVersion, field).major >= 580;
}
