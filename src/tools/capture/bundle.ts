import { FakegpuError, oneOf, show } from '../../errors.js';

/**
 * One file with everything `capture node` reads, written by the script users run on a GPU node: plain
 * POSIX shell, read-only, nothing to install; a command the node lacks leaves its section out. The
 * hostname is never collected; the script's header lists what is, and what reaches a profile.
 */

export const SECTIONS = [
  'nvidia-smi-xml',
  'topo',
  'mig-lgip',
  'mig-lgipp',
  'lspci',
  'pci',
  'net',
  'rdma',
  'ibdev2netdev',
  'ip-link',
  'ip-addr',
  'ip-route',
] as const;
export type Section = (typeof SECTIONS)[number];

const MAGIC = 'fakegpu-capture v1';

export const CAPTURE_SCRIPT = `#!/bin/sh
# fakegpu capture script: run on a GPU node (no root needed), then
#   fakegpu capture node --bundle capture.txt --output-file profile.yaml [--anonymize]
# It only reads, and collects no hostname. What capture.txt holds, section by section:
#   nvidia-smi-xml  nvidia-smi -q -x: each GPU's model, bus ID, UUID, serial numbers, board and part
#                   IDs, driver, MIG and NVLink fabric state (cluster UUID), and the processes on the
#                   GPUs (PIDs and command names)
#   topo, mig-lgip, mig-lgipp: nvidia-smi topo -m, mig -lgip, mig -lgipp (GPU-NIC matrix, MIG profiles)
#   lspci           lspci -D -vmm -nn: every PCI device's slot, class, vendor, device and NUMA node
#   pci, net, rdma  the sysfs paths of every PCI device, network interface and RDMA device
#   ibdev2netdev    ibdev2netdev -v: RDMA devices and their interfaces
#   ip-link         ip -j link: every interface's name, MAC address, MTU and state
#   ip-addr         ip -j addr: every interface's IPv4 and IPv6 addresses
#   ip-route        ip -j route show default: the default gateway's address and interface
# The profile keeps no serial, process, IPv6 address or gateway; with --anonymize no UUID, MAC, IPv4
# address or fabric cluster UUID either. capture.txt itself holds them all: read it before sharing it.
# Usage: sh capture.sh > capture.txt
echo '${MAGIC}'
run() {
  name=$1; shift
  command -v "$1" >/dev/null 2>&1 || return 0
  echo "=== fakegpu-capture $name ==="
  "$@" 2>/dev/null
  echo "=== fakegpu-capture-exit $name $? ==="
}
links() {
  name=$1; pattern=$2; suffix=$3
  echo "=== fakegpu-capture $name ==="
  for d in $pattern; do
    [ -e "$d$suffix" ] || continue
    n=\${d##*/}
    printf '%s %s' "$n" "$(readlink -f "$d$suffix")"
    [ -z "$suffix" ] && printf ' %s' "$(cat "$d/numa_node" 2>/dev/null)"
    printf '\\n'
  done
  echo "=== fakegpu-capture-exit $name 0 ==="
}
run nvidia-smi-xml nvidia-smi -q -x
run topo nvidia-smi topo -m
run mig-lgip nvidia-smi mig -lgip
run mig-lgipp nvidia-smi mig -lgipp
run lspci lspci -D -vmm -nn
links pci '/sys/bus/pci/devices/*' ''
links net '/sys/class/net/*' /device
links rdma '/sys/class/infiniband/*' /device
run ibdev2netdev ibdev2netdev -v
run ip-link ip -j link
run ip-addr ip -j addr
run ip-route ip -j route show default
`;

export interface Bundle {
  sections: Partial<Record<Section, string>>;
  /** Sections present but whose command failed, as `<name> (exit <n>)`. */
  failed: string[];
}

export function parseBundle(text: string, source: string): Bundle {
  const lines = text.split(/\r?\n/);
  if (lines[0]?.trim() !== MAGIC)
    throw new FakegpuError(
      source,
      `does not start with ${show(MAGIC)}; expected the output of the script \`fakegpu capture script\` prints`,
    );
  const bundle: Bundle = { sections: {}, failed: [] };
  let current: { name: string; body: string[] } | undefined;
  for (const line of lines.slice(1)) {
    const open = /^=== fakegpu-capture (\S+) ===$/.exec(line);
    const close = /^=== fakegpu-capture-exit (\S+) (\d+) ===$/.exec(line);
    if (open?.[1] !== undefined) {
      current = { name: open[1], body: [] };
    } else if (close?.[1] !== undefined && current?.name === close[1]) {
      const name = current.name;
      if (!(SECTIONS as readonly string[]).includes(name))
        throw new FakegpuError(source, `unknown section ${show(name)}; sections: ${oneOf(SECTIONS)}`);
      if (close[2] === '0') bundle.sections[name as Section] = `${current.body.join('\n')}\n`;
      else bundle.failed.push(`${name} (exit ${close[2]})`);
      current = undefined;
    } else if (current) {
      current.body.push(line);
    }
  }
  if (current)
    throw new FakegpuError(source, `section ${show(current.name)} is cut off: the file is truncated`);
  return bundle;
}
