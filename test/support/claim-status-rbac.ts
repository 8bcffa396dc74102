import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { KubeClaimStatus } from '../../src/kube/claim-status.js';
import { KubeObjects } from '../../src/kube/objects.js';
import { claimPath } from '../../src/kube/types/claim.js';
import { kubectl, mustKubectl, type Result } from './cluster.js';
import { attempt, freshNamespace, idlePod, podToken, rbacOf, tokenConfig } from './rbac.js';

/**
 * Claim status with the chart's own tokens, on whatever release the cluster runs: another claim's
 * allocation or reservedFor, `status.devices` of another driver or of another node's pool are refused
 * (by the API server itself where it checks, 1.36+, else by the chart's admission policy), and the NIC
 * driver's entries of the writer's own node let through, as its code writes them.
 */

const OWN = 'fakegpu-claim-own';
const OTHER = 'fakegpu-claim-other';
const NIC = 'dra.net';
const GPU = 'gpu.nvidia.com';

/** Who refused a write: the API server's own check (granular status authorization) or the chart's policy. */
export type RefusedBy = 'api-server' | 'policy' | 'rbac';

export interface ClaimStatusCheck {
  what: string;
  /** For a write that must be refused: by whom it was; for one that must pass: 'allowed'. */
  outcome: RefusedBy | 'allowed' | 'ALLOWED (should be refused)' | 'REFUSED (should pass)';
  detail: string;
}

const device = (driver: string, pool: string, name: string) => ({
  request: 'devs',
  driver,
  pool,
  device: name,
});

/** A claim of three devices: pending, or (`allocate`) NICs of both nodes' pools and a GPU allocated on OWN and reserved, as the admin writes it. */
function claim(e: Exports, ns: string, name: string, allocate: boolean): void {
  mustKubectl(
    e,
    ['create', '-f', '-'],
    JSON.stringify({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name, namespace: ns },
      spec: {
        devices: {
          requests: [
            {
              name: 'devs',
              exactly: { deviceClassName: 'fakegpu-claim-status', allocationMode: 'ExactCount', count: 3 },
            },
          ],
        },
      },
    }),
  );
  if (!allocate) return;
  const status = {
    status: {
      allocation: {
        devices: {
          results: [device(NIC, OWN, 'nic-0'), device(NIC, OTHER, 'nic-1'), device(GPU, OWN, 'gpu-0')],
        },
        nodeSelector: {
          nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [OWN] }] }],
        },
      },
      // Not a pod: the claim controller would drop a reservation for a pod that does not use the claim.
      reservedFor: [{ apiGroup: 'example.com', resource: 'things', name: 'thing', uid: 'c1a1-0000' }],
    },
  };
  mustKubectl(e, [
    'patch',
    'resourceclaim',
    name,
    '-n',
    ns,
    '--subresource',
    'status',
    '--type',
    'merge',
    '-p',
    JSON.stringify(status),
  ]);
}

/** What refused it, read from the message. */
function refusedBy(r: Result): RefusedBy {
  if (/requires resource=\\?"?resourceclaims\/(binding|driver)/.test(r.err)) return 'api-server';
  if (/ValidatingAdmissionPolicy|may not change|may write only/.test(r.err)) return 'policy';
  return 'rbac';
}

function writer(kubeconfig: string): {
  merge(path: string, body: object): Promise<Result>;
  apply(ns: string, name: string, driver: string, pool: string, dev: string): Promise<Result>;
} {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const objects = new KubeObjects(kc);
  const status = new KubeClaimStatus(kc, 10_000);
  // Each write's data differs: an apply equal to what is stored changes nothing, and nothing is refused.
  let writes = 0;
  return {
    merge: (path, body) => attempt(objects.patch(path, body)),
    // The plugin's own write (src/node/nic/status.ts): one server-side apply, the driver as field manager.
    apply: (ns, name, driver, pool, dev) =>
      attempt(
        status.applyStatus(
          ns,
          name,
          {
            apiVersion: 'resource.k8s.io/v1',
            kind: 'ResourceClaim',
            metadata: { name, namespace: ns },
            status: { devices: [{ driver, pool, device: dev, conditions: [], data: { write: ++writes } }] },
          },
          { fieldManager: driver, force: true },
        ),
      ),
  };
}

/** Admission picks a new policy up a moment after RBAC: until a write only it refuses is refused (30 s). */
async function policyInForce(plugin: ReturnType<typeof writer>, ns: string): Promise<void> {
  for (let tries = 0; tries < 60; tries++) {
    if ((await plugin.apply(ns, 'victim', NIC, OTHER, 'nic-1')).code !== 0) return;
    await sleep(500);
  }
}

/** Runs every check in namespace `ns`; the caller asserts on the outcomes. */
export async function claimStatusChecks(e: Exports, ns: string): Promise<ClaimStatusCheck[]> {
  const { list } = rbacOf(e, 'cs', ns, ['--set', 'fleet.enabled=true', '--set', 'fleet.nics=true']);
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-claim-status-'));
  await freshNamespace(e, ns);
  const out: ClaimStatusCheck[] = [];
  const refuse = (what: string, r: Result): void => {
    out.push(
      r.code === 0
        ? { what, outcome: 'ALLOWED (should be refused)', detail: '' }
        : { what, outcome: refusedBy(r), detail: r.err.trim().slice(0, 300) },
    );
  };
  const allow = (what: string, r: Result): void => {
    out.push({
      what,
      outcome: r.code === 0 ? 'allowed' : 'REFUSED (should pass)',
      detail: r.err.trim().slice(0, 300),
    });
  };
  try {
    mustKubectl(e, ['apply', '-f', '-'], list);
    for (const n of [OWN, OTHER])
      mustKubectl(
        e,
        ['create', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: n } }),
      );
    mustKubectl(e, ['create', '-f', '-'], idlePod('cs-plugin-pod', ns, OWN, 'cs-plugin'));
    claim(e, ns, 'victim', true);
    claim(e, ns, 'pending', false);
    const plugin = writer(tokenConfig(e, dir, 'plugin.json', podToken(e, ns, 'cs-plugin', 'cs-plugin-pod')));
    const fleetToken = mustKubectl(e, ['create', 'token', 'cs-fleet', '-n', ns, '--duration', '10m']).trim();
    const fleet = writer(tokenConfig(e, dir, 'fleet.json', fleetToken));
    const path = `${claimPath(ns, 'victim')}/status`;
    // RBAC and the policy are picked up a moment later: the plugin's own write, until it passes (30 s).
    let own: Result;
    for (let tries = 0; ; tries++) {
      own = await plugin.apply(ns, 'victim', NIC, OWN, 'nic-0');
      if (own.code === 0 || tries >= 60) break;
      await sleep(500);
    }
    allow("plugin: its node's NIC entry, as its code writes it", own);
    await policyInForce(plugin, ns);
    const moved = [device(NIC, OWN, 'nic-0'), device(NIC, OWN, 'nic-1'), device(NIC, OWN, 'nic-2')];
    const reserved = [
      { apiGroup: 'example.com', resource: 'things', name: 'thing', uid: 'c1a1-0000' },
      { resource: 'pods', name: 'cs-plugin-pod', uid: 'c1a1-0001' },
    ];
    for (const [who, w] of [
      ['plugin', plugin],
      ['fleet', fleet],
    ] as const) {
      refuse(
        `${who}: a pending claim's allocation`,
        await w.merge(`${claimPath(ns, 'pending')}/status`, {
          status: { allocation: { devices: { results: moved } } },
        }),
      );
      refuse(`${who}: reservedFor`, await w.merge(path, { status: { reservedFor: reserved } }));
      refuse(`${who}: another driver's entry`, await w.apply(ns, 'victim', GPU, OWN, 'gpu-0'));
    }
    refuse("plugin: another node's pool", await plugin.apply(ns, 'victim', NIC, OTHER, 'nic-1'));
    allow("fleet: a NIC entry of any node's pool", await fleet.apply(ns, 'victim', NIC, OTHER, 'nic-1'));
    return out;
  } finally {
    kubectl(e, ['delete', 'pod', '--all', '-n', ns, '--force', '--grace-period=0']);
    kubectl(e, ['delete', 'node', OWN, OTHER, '--ignore-not-found']);
    kubectl(e, ['delete', '--ignore-not-found', '--wait=false', '-f', '-'], list);
    kubectl(e, ['delete', 'namespace', ns, '--wait=false']);
    rmSync(dir, { recursive: true, force: true });
  }
}
