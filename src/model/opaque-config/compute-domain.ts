import { LABEL_VALUE } from '../../kube/types/names.js';
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

/** Kubernetes' label-value rule, in apimachinery's words (`content.IsLabelValue`). */
const LABEL_VALUE_RULE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/**
 * NVIDIA's `ValidateDomainID` (v0.5.0, PR #1368): the ID names the domain's folder and is a node label
 * value, so it must be one path segment (apimachinery's `IsPathSegmentName`) and a label value.
 */
function checkDomainID(id: string, full: boolean): void {
  if (id === '') throw new ConfigError('domainID cannot be empty');
  if (!full) return;
  const path =
    id === '.' || id === '..'
      ? [`may not be '${id}'`]
      : ['/', '%'].filter((c) => id.includes(c)).map((c) => `may not contain '${c}'`);
  if (path.length > 0)
    throw new ConfigError(
      `domainID ${JSON.stringify(id)} is not a valid single path component: ${path.join(', ')}`,
    );
  const label = [
    ...(Buffer.byteLength(id) > 63 ? ['must be no more than 63 characters'] : []),
    ...(LABEL_VALUE.test(id) ? [] : [LABEL_VALUE_RULE]),
  ];
  if (label.length > 0) throw new ConfigError(`domainID must be a valid label value: ${label.join('; ')}`);
}

function str(v: unknown, path: string): string {
  if (v === undefined) return '';
  if (typeof v !== 'string') throw typeError(path, 'string', v);
  return v;
}

/** `full`: v0.5.0's whole domainID check; earlier releases only refuse an empty ID. */
export function decodeComputeDomainConfig(parameters: unknown, full = true): ComputeDomainConfig {
  const { kind, params } = registeredKind(parameters, COMPUTE_DOMAIN_KINDS);
  try {
    if (kind === 'ComputeDomainChannelConfig') {
      strict(params, ['apiVersion', 'kind', 'domainID', 'allocationMode'], '');
      const c = {
        kind,
        domainID: str(params['domainID'], 'ComputeDomainChannelConfig.domainID'),
        allocationMode: str(params['allocationMode'], 'ComputeDomainChannelConfig.allocationMode'),
      };
      checkDomainID(c.domainID, full);
      return c;
    }
    strict(params, ['apiVersion', 'kind', 'domainID'], '');
    const c = { kind, domainID: str(params['domainID'], 'ComputeDomainDaemonConfig.domainID') };
    checkDomainID(c.domainID, full);
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
