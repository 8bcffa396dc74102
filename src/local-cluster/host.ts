import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { FakegpuError } from '../errors.js';
import { NODE_IP, NODE_LINK, PORTS } from './config.js';

/** What the cluster needs of this machine and leaves on it: root, kernel features, free ports, a bridge, mounts. */

export function preflight(): void {
  if (process.platform !== 'linux')
    throw new FakegpuError('cluster up', `the local cluster needs Linux; this is ${process.platform}`);
  if (process.getuid?.() !== 0) {
    throw new FakegpuError(
      'cluster up',
      'the local cluster runs a kubelet and containerd, which need root; run it as root (sudo -E npx fakegpu cluster up)',
    );
  }
  const fs = readFileSync('/proc/filesystems', 'utf8');
  if (!/\boverlay\b/.test(fs))
    throw new FakegpuError(
      'cluster up',
      'the kernel has no overlay filesystem (not in /proc/filesystems); containerd needs it (modprobe overlay)',
    );
  const v1 = existsSync('/sys/fs/cgroup/memory') && existsSync('/sys/fs/cgroup/cpu');
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
  if (!v1 && !v2)
    throw new FakegpuError(
      'cluster up',
      'no cgroup hierarchy is mounted under /sys/fs/cgroup; the kubelet needs cgroups (v1 or v2)',
    );
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => {
      resolve(false);
    });
    s.listen(port, '127.0.0.1', () => {
      s.close(() => {
        resolve(true);
      });
    });
  });
}

/** The cluster's ports, kube-proxy's only where it runs (`--helm`). */
export async function checkPorts(kubeProxy: boolean): Promise<void> {
  for (const [name, port] of Object.entries(PORTS)) {
    if (!kubeProxy && name.startsWith('kubeProxy')) continue;
    if (!(await portFree(port))) {
      throw new FakegpuError(
        'cluster up',
        `port ${port} (${name}) on 127.0.0.1 is already in use; stop what holds it (ss -ltnp 'sport = :${port}') or run "fakegpu cluster down"`,
      );
    }
  }
}

export function ensureNodeLink(): void {
  if (existsSync(`/sys/class/net/${NODE_LINK}`)) return;
  for (const a of [
    ['link', 'add', NODE_LINK, 'type', 'bridge'],
    ['addr', 'add', `${NODE_IP}/32`, 'dev', NODE_LINK],
    ['link', 'set', NODE_LINK, 'up'],
  ]) {
    const r = spawnSync('ip', a, { encoding: 'utf8' });
    if (r.error || r.status !== 0) {
      throw new FakegpuError(
        'cluster up',
        `cannot create the node's network interface (ip ${a.join(' ')}): ${r.stderr || String(r.error)}; the iproute2 package and root are needed`,
      );
    }
  }
}

function mountsUnder(dir: string): string[] {
  const lines = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  const points = lines.map((x) => x.split(' ')[4] ?? '').filter((m) => m === dir || m.startsWith(`${dir}/`));
  // Deepest first, so parents unmount after their children.
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Unmounts what the cluster mounted under its directory, removes the bridges it made and kube-proxy's rules. */
export function cleanUpHost(dir: string): void {
  for (const m of mountsUnder(dir)) spawnSync('umount', ['-l', m]);
  // kube-proxy (--helm) leaves its nftables tables when stopped, as it does on a real node.
  for (const family of ['ip', 'ip6'])
    if (spawnSync('nft', ['list', 'table', family, 'kube-proxy']).status === 0)
      spawnSync('nft', ['delete', 'table', family, 'kube-proxy']);
  for (const link of ['fakegpu0', NODE_LINK])
    if (existsSync(`/sys/class/net/${link}`)) spawnSync('ip', ['link', 'delete', link]);
}

/**
 * The fixed ports of fakegpu's own processes (plugin, fleet and its replicas, controller, dcgm, Karpenter,
 * Kueue: 9400–9416 and 51516–51543) lie in Linux's ephemeral range, so an outgoing connection may hold one just when a
 * process starts to listen there ("address already in use", seen once in CI after the 1,000-node e2e).
 */
export const OWN_PORTS = '9400-9416,51516-51543';

/** The kernel's reserved-port list with ours added, as the sysctl writes it back; unchanged if present. */
export function withOwnPorts(current: string): string {
  const have = current
    .trim()
    .split(',')
    .filter((x) => x !== '');
  const add = OWN_PORTS.split(',').filter((r) => !have.includes(r));
  return [...have, ...add].join(',');
}

/** Keeps the kernel from handing our ports to outgoing connections; best effort (a container may refuse). */
export function reserveOwnPorts(log: (line: string) => void): void {
  const file = '/proc/sys/net/ipv4/ip_local_reserved_ports';
  try {
    const current = readFileSync(file, 'utf8');
    const next = withOwnPorts(current);
    if (next !== current.trim()) writeFileSync(file, `${next}\n`);
  } catch (e) {
    log(
      `could not reserve ports ${OWN_PORTS} (${e instanceof Error ? e.message : String(e)}); a start may meet one in use`,
    );
  }
}
