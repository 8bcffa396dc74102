/**
 * The two Go parsers DRANET checks a config's addresses with, as far as their messages go: `netip.ParsePrefix`
 * (go1.26 src/net/netip/netip.go) and `net.ParseMAC` (src/net/mac.go), for 6-byte Ethernet addresses.
 * IPv4 is checked field by field as Go does, with its messages; an IPv6 address is checked by the URL
 * parser's IPv6 grammar, and a bad one is reported with Go's words for the commonest failure.
 */

const q = (s: string): string => JSON.stringify(s);
const addrError = (a: string, msg: string, at?: string): string =>
  `ParseAddr(${q(a)}): ${msg}${at !== undefined ? ` (at ${q(at)})` : ''}`;

function ipv4Error(a: string): string | null {
  let val = 0;
  let digits = 0;
  let pos = 0;
  for (let i = 0; i < a.length; i++) {
    const c = a.charAt(i);
    if (c >= '0' && c <= '9') {
      if (digits === 1 && val === 0) return addrError(a, 'IPv4 field has octet with leading zero');
      val = val * 10 + Number(c);
      digits++;
      if (val > 255) return addrError(a, 'IPv4 field has value >255');
    } else if (c === '.') {
      if (i === 0 || i === a.length - 1 || a.charAt(i - 1) === '.')
        return addrError(a, 'IPv4 field must have at least one digit', a.slice(i));
      if (pos === 3) return addrError(a, 'IPv4 address too long');
      pos++;
      val = 0;
      digits = 0;
    } else return addrError(a, 'unexpected character', a.slice(i));
  }
  return pos < 3 ? addrError(a, 'IPv4 address too short') : null;
}

/** `netip.ParseAddr`'s error for `a`, and whether it is IPv6; error null: it parses. */
function parseAddr(a: string): { error: string | null; v6: boolean } {
  for (const c of a) {
    if (c === '.') return { error: ipv4Error(a), v6: false };
    if (c === ':') {
      // A zone parses; ParsePrefix refuses it after.
      const ok = a.includes('%') || URL.canParse(`http://[${a}]/`);
      return {
        error: ok ? null : addrError(a, 'each colon-separated field must have at least one digit'),
        v6: true,
      };
    }
    if (c === '%') return { error: addrError(a, 'missing IPv6 address'), v6: true };
  }
  return { error: addrError(a, 'unable to parse IP'), v6: false };
}

/** `netip.ParsePrefix(s)`'s error text; null: `s` is a prefix. */
export function prefixError(s: string): string | null {
  const fail = (msg: string): string => `netip.ParsePrefix(${q(s)}): ${msg}`;
  const i = s.lastIndexOf('/');
  if (i < 0) return fail("no '/'");
  const addr = parseAddr(s.slice(0, i));
  if (addr.error !== null) return fail(addr.error);
  if (addr.v6 && s.slice(0, i).includes('%')) return fail('IPv6 zones cannot be present in a prefix');
  const bits = s.slice(i + 1);
  if (!/^(0|[1-9]\d*)$/.test(bits)) return fail(`bad bits after slash: ${q(bits)}`);
  if (Number(bits) > (addr.v6 ? 128 : 32)) return fail('prefix length out of range');
  return null;
}

/** `net.ParseMAC` of a 6-byte address (colon, hyphen or dot form), as `HardwareAddr.String()` writes it. */
export function parseMac(s: string): string | null {
  const hex = '[0-9a-fA-F]';
  const parts = new RegExp(`^${hex}{4}(\\.${hex}{4}){2}$`).test(s)
    ? s.split('.').flatMap((p) => [p.slice(0, 2), p.slice(2)])
    : new RegExp(`^${hex}{2}([:-])${hex}{2}(\\1${hex}{2}){4}$`).test(s)
      ? s.split(/[:-]/)
      : null;
  return parts ? parts.join(':').toLowerCase() : null;
}
