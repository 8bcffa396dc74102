import { parseMac, prefixError } from './netip.js';

/**
 * DRANET's opaque claim config (`NetworkConfig`, DRANET v1.4.0 pkg/apis/types.go), decoded as far as
 * the claim's device status needs it: the interface's name, addresses, DHCP and hardware address. It
 * has no apiVersion or kind. DRANET decodes it strictly (sigs.k8s.io/json `UnmarshalStrict`, field
 * names case-sensitive) and checks it in pkg/apis/validation.go; the messages below are its, with the
 * `failed to unmarshal …` prefixes of `ValidateConfig`. Fields the status does not read are known (an
 * unknown one is refused) but their values are not checked here.
 */

export interface NicInterfaceConfig {
  /** The name inside the pod; absent: the host's. */
  name?: string;
  addresses?: string[];
  dhcp?: boolean;
  hardwareAddr?: string;
}

const TOP = ['profile', 'interface', 'routes', 'rules', 'neighbors', 'ethtool'];
const INTERFACE = [
  'name',
  'addresses',
  'dhcp',
  'mtu',
  'hardwareAddr',
  'gsoMaxSize',
  'groMaxSize',
  'gsoIPv4MaxSize',
  'groIPv4MaxSize',
  'disableEbpfPrograms',
  'forwarding',
  'vrf',
];
const MAX_INTERFACE_NAME_LEN = 15;

/** encoding/json's name for a JSON value's kind, as its `UnmarshalTypeError` says it. */
function kindOf(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  return typeof v === 'object' ? 'object' : typeof v === 'boolean' ? 'bool' : typeof v;
}

const typeError = (v: unknown, struct: string, field: string, type: string): string =>
  `failed to unmarshal JSON data: json: cannot unmarshal ${kindOf(v)} into Go struct field ${struct}.${field} of type ${type}`;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function unknownFields(o: Record<string, unknown>, known: readonly string[], prefix: string): string[] {
  return Object.keys(o)
    .filter((k) => !known.includes(k))
    .map((k) => `failed to unmarshal strict JSON data: unknown field "${prefix}${k}"`);
}

/** DRANET's `isValidLinuxInterfaceName`: every rule that fails, in its order. */
function nameErrors(name: string, path: string): string[] {
  if (name === '') return [];
  const e: string[] = [];
  if (Buffer.byteLength(name) > MAX_INTERFACE_NAME_LEN)
    e.push(`${path}: name '${name}' exceeds maximum length of ${MAX_INTERFACE_NAME_LEN} characters`);
  if (name.includes('/')) e.push(`${path}: name '${name}' cannot contain '/'`);
  if (/[ \t\n\v\f\r]/.test(name)) e.push(`${path}: name '${name}' cannot contain whitespace`);
  if (name === '.' || name === '..') e.push(`${path}: name '${name}' cannot be '.' or '..'`);
  for (const r of name) {
    if (/[\p{L}\p{Nd}_.-]/u.test(r) || r === '/' || /\s/.test(r)) continue;
    e.push(
      `${path}: name '${name}' contains invalid character '${r}'. Only letters, digits, '-', '_', '.' are recommended`,
    );
  }
  return e;
}

/** The fields the status reads, typed as Go would decode them; a string: encoding/json's error, the only one. */
function decodeInterface(v: Record<string, unknown>): NicInterfaceConfig | string {
  const config: NicInterfaceConfig = {};
  const { name, addresses, dhcp, hardwareAddr } = v;
  const wrong = (x: unknown, field: string, type: string): string =>
    typeError(x, 'InterfaceConfig', `interface.${field}`, type);
  if (typeof name === 'string') config.name = name;
  else if (name != null) return wrong(name, 'name', 'string');
  if (Array.isArray(addresses)) {
    const list: unknown[] = addresses;
    const bad = list.find((a) => typeof a !== 'string');
    if (bad !== undefined) return wrong(bad, 'addresses', 'string');
    config.addresses = list as string[];
  } else if (addresses != null) return wrong(addresses, 'addresses', '[]string');
  if (typeof dhcp === 'boolean') config.dhcp = dhcp;
  else if (dhcp != null) return wrong(dhcp, 'dhcp', 'bool');
  if (typeof hardwareAddr === 'string') config.hardwareAddr = hardwareAddr;
  else if (hardwareAddr != null) return wrong(hardwareAddr, 'hardwareAddr', 'string');
  return config;
}

/** `validateInterfaceConfig`'s checks of the fields decoded here, in its order. */
function interfaceErrors(c: NicInterfaceConfig): string[] {
  const e = nameErrors(c.name ?? '', 'interface.name');
  (c.addresses ?? []).forEach((a, i) => {
    const err = prefixError(a);
    if (err !== null) e.push(`interface.addresses[${i}]: invalid IP CIDR format '${a}': ${err}`);
  });
  if (c.dhcp === true && (c.addresses ?? []).length > 0)
    e.push('interface: dhcp and addresses are mutually exclusive');
  if (c.hardwareAddr !== undefined && parseMac(c.hardwareAddr) === null)
    e.push(
      `interface.hardwareAddress: invalid Hardware Address format '${c.hardwareAddr}': address ${c.hardwareAddr}: invalid MAC address`,
    );
  return e;
}

/**
 * A claim config's parameters as DRANET's `ValidateConfig` reads them: the interface part, or every
 * error it gives. A type error is the only error (decoding stops there); otherwise the unknown fields,
 * in document order, then the checks. Absent parameters are no config.
 */
export function decodeNicConfig(parameters: unknown): {
  config: NicInterfaceConfig | null;
  errors: string[];
} {
  if (parameters === undefined || parameters === null) return { config: null, errors: [] };
  if (!isObject(parameters))
    return {
      config: null,
      errors: [
        `failed to unmarshal JSON data: json: cannot unmarshal ${kindOf(parameters)} into Go value of type apis.NetworkConfig`,
      ],
    };
  const i = parameters['interface'];
  if (i != null && !isObject(i))
    return { config: null, errors: [typeError(i, 'NetworkConfig', 'interface', 'apis.InterfaceConfig')] };
  const config = i == null ? {} : decodeInterface(i);
  if (typeof config === 'string') return { config: null, errors: [config] };
  const strict = Object.keys(parameters).flatMap((k) =>
    k === 'interface' && i != null
      ? unknownFields(i, INTERFACE, 'interface.')
      : TOP.includes(k)
        ? []
        : unknownFields({ [k]: 0 }, [], ''),
  );
  return { config, errors: [...strict, ...interfaceErrors(config)] };
}
