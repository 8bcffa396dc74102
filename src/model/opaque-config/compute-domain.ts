import { ConfigError, registeredKind, strict, typeError } from './decode.js';

/**
 * The opaque configs NVIDIA's ComputeDomain controller puts into the claim templates it creates, and
 * the compute-domain kubelet plugin decodes at prepare: which domain a channel or daemon claim belongs
 * to and, for a channel, whether it gets one channel or all of them. Decoded strictly, with the driver's
 * messages (compute-domains.md §1; `domainID cannot be empty` from its Validate).
 */

export const COMPUTE_DOMAIN_KINDS = ['ComputeDomainChannelConfig', 'ComputeDomainDaemonConfig'] as const;
export type ComputeDomainKind = (typeof COMPUTE_DOMAIN_KINDS)[number];

export type ComputeDomainConfig =
  | { kind: 'ComputeDomainChannelConfig'; domainID: string; allocationMode: string }
  | { kind: 'ComputeDomainDaemonConfig'; domainID: string };

function str(v: unknown, path: string): string {
  if (v === undefined) return '';
  if (typeof v !== 'string') throw typeError(path, 'string', v);
  return v;
}

export function decodeComputeDomainConfig(parameters: unknown): ComputeDomainConfig {
  const { kind, params } = registeredKind(parameters, COMPUTE_DOMAIN_KINDS);
  try {
    if (kind === 'ComputeDomainChannelConfig') {
      strict(params, ['apiVersion', 'kind', 'domainID', 'allocationMode'], '');
      const c = {
        kind,
        domainID: str(params['domainID'], 'ComputeDomainChannelConfig.domainID'),
        allocationMode: str(params['allocationMode'], 'ComputeDomainChannelConfig.allocationMode'),
      };
      if (c.domainID === '') throw new ConfigError('domainID cannot be empty');
      return c;
    }
    strict(params, ['apiVersion', 'kind', 'domainID'], '');
    const c = { kind, domainID: str(params['domainID'], 'ComputeDomainDaemonConfig.domainID') };
    if (c.domainID === '') throw new ConfigError('domainID cannot be empty');
    return c;
  } catch (e) {
    if (
      e instanceof ConfigError &&
      (e.message.startsWith('strict decoding error') || e.message.startsWith('json:'))
    )
      throw new ConfigError(`error decoding config parameters: ${e.message}`);
    throw e;
  }
}
