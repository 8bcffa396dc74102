// Kubernetes' name rules (k8s.io/apimachinery/pkg/util/validation), written once: every check of a
// node, namespace, object, driver or label name in fakegpu uses these.
import { FakegpuError, show } from '../../errors.js';

/** An RFC 1123 label: lower-case a-z, 0-9 and '-', starting and ending alphanumeric; at most 63 characters. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** An RFC 1123 subdomain: labels joined by '.'; at most 253 characters. */
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A label value, which may be empty. */
export const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
/** `prefix/name`, as a CRD's pattern has it; the lengths are checked apart (`isLabelKey`). */
export const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

export const isDnsLabel = (s: string): boolean => s.length <= 63 && DNS_LABEL.test(s);
export const isDnsSubdomain = (s: string): boolean => s.length <= 253 && DNS_SUBDOMAIN.test(s);
/** A DRA driver name: a subdomain of at least two labels, at most 63 characters (resource.k8s.io's rule). */
export const DRIVER_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;
export const isDriverName = (s: string): boolean => s.length <= 63 && DRIVER_NAME_PATTERN.test(s);

/** A namespace name as the API server takes it (an RFC 1123 label), refused in one line. */
export function checkNamespace(name: string, field: string): string {
  if (!isDnsLabel(name))
    throw new FakegpuError(
      field,
      `${show(name)} is not a valid namespace; expected an RFC 1123 label (lower-case a-z, 0-9 and '-', at most 63 characters)`,
    );
  return name;
}
