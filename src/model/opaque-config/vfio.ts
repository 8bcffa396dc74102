import { ConfigError, isObject, strict, typeError, type Json } from './decode.js';

/**
 * NVIDIA's `VfioDeviceConfig` (v0.5.0 api/nvidia.com/resource/v1beta1/vfiodeviceconfig.go, iommu.go):
 * decoded strictly, normalised and validated with its words. Decoding is not gated, as NVIDIA's is not.
 */

export const BACKEND_POLICIES = ['LegacyOnly', 'PreferIommuFD'] as const;
export type BackendPolicy = (typeof BACKEND_POLICIES)[number];

/** After `Normalize`: every field set. */
export interface IommuConfig {
  backendPolicy: BackendPolicy;
  enableAPIDevice: boolean;
}

/**
 * A config that decodes but fails `Validate`: NVIDIA's prepare says `error validating GPU config: …`
 * ("GPU" even for VFIO), not the decoder's prefix.
 */
export class ConfigInvalid extends ConfigError {}

/** `DefaultVfioDeviceConfig()` and `Normalize()` of a config without `iommu`. */
export const DEFAULT_IOMMU: IommuConfig = { backendPolicy: 'LegacyOnly', enableAPIDevice: false };

export function decodeVfio(params: Json): IommuConfig {
  strict(params, ['apiVersion', 'kind', 'iommu'], '');
  const raw = params['iommu'];
  if (raw === undefined || raw === null) return { ...DEFAULT_IOMMU };
  if (!isObject(raw)) throw typeError('VfioDeviceConfig.iommu', 'v1beta1.IOMMUConfig', raw);
  strict(raw, ['backendPolicy', 'enableAPIDevice'], 'iommu.');
  const policy = raw['backendPolicy'] ?? '';
  if (typeof policy !== 'string') throw typeError('IOMMUConfig.iommu.backendPolicy', 'string', policy);
  const api = raw['enableAPIDevice'] ?? false;
  if (typeof api !== 'boolean') throw typeError('IOMMUConfig.iommu.enableAPIDevice', 'bool', api);
  const normalized = policy === '' ? 'LegacyOnly' : policy;
  if (!BACKEND_POLICIES.includes(normalized as BackendPolicy))
    throw new ConfigInvalid(
      `unknown IOMMU backend policy: ${normalized}, supported IOMMU backend policies: ${BACKEND_POLICIES.join(', ')}`,
    );
  return { backendPolicy: normalized as BackendPolicy, enableAPIDevice: api };
}
