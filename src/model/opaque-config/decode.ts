/**
 * How NVIDIA's driver decodes an opaque config of `resource.nvidia.com/v1beta1`: the kind must be one its
 * scheme registers, and decoding is strict (an unknown field is an error naming its JSON path), with
 * the messages of Kubernetes' decoder. Shared by the GPU and the compute-domain drivers' configs.
 */

export const GROUP_VERSION = 'resource.nvidia.com/v1beta1';

export class ConfigError extends Error {}

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Kubernetes' strict decoder names every unknown field by its JSON path. */
export function strict(obj: Json, allowed: readonly string[], path: string): void {
  const unknown = Object.keys(obj).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) {
    throw new ConfigError(
      `strict decoding error: ${unknown.map((k) => `unknown field "${path}${k}"`).join(', ')}`,
    );
  }
}

export function typeError(path: string, want: string, got: unknown): ConfigError {
  return new ConfigError(
    `json: cannot unmarshal ${Array.isArray(got) ? 'array' : typeof got} into Go struct field ${path} of type ${want}`,
  );
}

/** The parameters' kind, when their apiVersion and kind are registered; else the decoder's refusal. */
export function registeredKind<K extends string>(
  parameters: unknown,
  kinds: readonly K[],
): { kind: K; params: Json } {
  if (!isObject(parameters))
    throw new ConfigError('error decoding config parameters: parameters must be a JSON object');
  const apiVersion = parameters['apiVersion'];
  const kind = parameters['kind'];
  if (apiVersion !== GROUP_VERSION) {
    throw new ConfigError(
      `error decoding config parameters: no kind "${String(kind)}" is registered for version "${String(apiVersion)}"`,
    );
  }
  if (!kinds.includes(kind as K)) {
    throw new ConfigError(
      `error decoding config parameters: no kind "${String(kind)}" is registered for version "${GROUP_VERSION}"`,
    );
  }
  return { kind: kind as K, params: parameters };
}
