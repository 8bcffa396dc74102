import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { Exports } from '../../src/local-cluster/cluster.js';
import { warningEvent } from '../../src/kube/event.js';
import { CLIQUE_LABEL, DOMAIN_LABEL, GPU_CLIQUE_LABEL } from '../../src/model/compute-domain/resource.js';
import { REPO_ROOT } from '../../src/process/repo.js';
import { eventually, kubectl, mustKubectl, testCluster, type Result } from '../support/cluster.js';
import { attempt, freshNamespace, podToken, rbacOf, tokenConfig } from '../support/rbac.js';
import { claimStatusChecks } from '../support/claim-status-rbac.js';
import { KubeObjects } from '../../src/kube/objects.js';
import { clientOf } from '../../src/kube/client.js';

/**
 * The chart's RBAC as a table, held to `test/fixtures/rbac/<variant>.txt` (`UPDATE_GOLDEN=1` rewrites
 * them; read the diff): what the real API server lets each of its service accounts do. And a plugin's
 * own pod-bound token against the admission policy: every write to another node, another pod or
 * anything but what the plugin's code writes refused, the plugin's own writes let through.
 */

const update = process.env['UPDATE_GOLDEN'] === '1';

/** `kubectl auth can-i --list` as rows `resources | non-resource URLs | resource names | verbs`, sorted. */
function canList(e: Exports, user: string, ns: string): string[] {
  const out = mustKubectl(e, ['auth', 'can-i', '--list', '--as', user, '-n', ns]);
  return out
    .split('\n')
    .slice(1)
    .filter((l) => l.trim() !== '')
    .map((l) => {
      // An empty first column (non-resource URLs) is all spaces: split, it is the first cell, ''.
      const cells = l.trimEnd().split(/\s{2,}/);
      const verbs = (cells[3] ?? '')
        .replace(/^\[|\]$/g, '')
        .split(' ')
        .sort();
      return [...cells.slice(0, 3), `[${verbs.join(' ')}]`].join(' | ');
    })
    .sort();
}

/** Values variants whose RBAC differs; the fleet is on in each, so every account of the chart is there. */
const VARIANTS: Record<string, string[]> = {
  default: ['--set', 'fleet.enabled=true'],
  'no-compute-domains': ['--set', 'fleet.enabled=true', '--set', 'resources.computeDomains.enabled=false'],
  'no-dcgm': ['--set', 'fleet.enabled=true', '--set', 'dcgm.enabled=false'],
  sharded: ['--set', 'fleet.enabled=true', '--set', 'fleet.replicas=3'],
};

const OWN = 'fakegpu-rbac-own';
const OTHER = 'fakegpu-rbac-other';

function node(name: string): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { keep: 'me' } } });
}

/** A pod that never runs (its node has no kubelet), labelled as a domain's IMEX daemon pod. */
function pod(name: string, ns: string, nodeName: string, serviceAccountName: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { [DOMAIN_LABEL]: 'rbac-domain' } },
    spec: {
      nodeName,
      serviceAccountName,
      automountServiceAccountToken: false,
      containers: [{ name: 'c', image: 'fakegpu.invalid/none:1', imagePullPolicy: 'Never' }],
    },
  });
}

/** A slice of a driver no DeviceClass selects, so it feeds no scheduler test. */
function slice(name: string, nodeName: string, pool: string): string {
  return JSON.stringify({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name },
    spec: {
      driver: 'rbac.fakegpu.dev',
      nodeName,
      pool: { name: pool, generation: 1, resourceSliceCount: 1 },
      devices: [{ name: 'gpu-0' }],
    },
  });
}

/** Merge patches as the plugin's and the fleet's own client sends them, and a JSON patch of an image. */
function writerOf(kubeconfig: string): {
  patch(path: string, body: object): Promise<unknown>;
  image(path: string): Promise<unknown>;
} {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const objects = new KubeObjects(kc);
  const http = clientOf(kc);
  // A merge patch would replace the whole container list, which the API server refuses by itself.
  const image = [{ op: 'replace', path: '/spec/containers/0/image', value: 'evil.invalid/root:1' }];
  return {
    patch: (path, body) => objects.patch(path, body),
    image: (path) =>
      http.send('PATCH', path, JSON.stringify(image), 'application/json', 'application/json-patch+json'),
  };
}

/** Every check's failure, asserted empty at the end: one run shows all of them, not only the first. */
const gaps: string[] = [];

function refused(r: Result, what: string, message: RegExp): void {
  if (r.code === 0) gaps.push(`${what}: allowed`);
  else if (!message.test(r.err))
    gaps.push(`${what}: refused, but not with ${String(message)}: ${r.err.trim()}`);
}

function allowed(r: Result, what: string): void {
  if (r.code !== 0) gaps.push(`${what}: refused: ${r.err.trim()}`);
}

describe('the chart gives each account only what its code does', () => {
  let e: Exports;
  before(async () => {
    e = await testCluster();
  });

  for (const [variant, args] of Object.entries(VARIANTS)) {
    it(`allows, with values ${variant}, exactly test/fixtures/rbac/${variant}.txt (kubectl auth can-i --list)`, async () => {
      const ns = `fakegpu-rbac-${variant}`;
      const { list, accounts } = rbacOf(e, 'rbac', ns, args);
      await freshNamespace(e, ns);
      try {
        mustKubectl(e, ['apply', '-f', '-'], list);
        const sa = (name: string) => `system:serviceaccount:${ns}:${name}`;
        // RBAC's informers pick the new bindings up a moment later.
        await eventually('the bindings to apply', () =>
          kubectl(e, ['auth', 'can-i', 'list', 'nodes', '--as', sa('rbac-uninstall-check')]).out.trim() ===
          'yes'
            ? true
            : undefined,
        );
        // What every account may (system:basic-user, discovery) is shown once; each account's rows are
        // what it may beyond that, in the release's namespace and in any other.
        const base = new Set(canList(e, sa('rbac-nobody'), ns));
        const lines = ['# every account, in any namespace', ...base];
        for (const a of accounts)
          for (const [where, n] of [
            ["the release's namespace", ns],
            ['any other namespace', 'default'],
          ] as const) {
            lines.push('', `# ${a.replace(/^rbac-/, '<release>-')} in ${where}`);
            lines.push(...canList(e, sa(a), n).filter((row) => !base.has(row)));
          }
        const text = `${lines.join('\n')}\n`;
        const file = join(REPO_ROOT, 'test', 'fixtures', 'rbac', `${variant}.txt`);
        if (update) {
          mkdirSync(dirname(file), { recursive: true });
          writeFileSync(file, text);
        }
        assert.equal(text, readFileSync(file, 'utf8'), `run UPDATE_GOLDEN=1 and read the diff of ${file}`);
      } finally {
        kubectl(e, ['delete', '--ignore-not-found', '--wait=false', '-f', '-'], list);
        kubectl(e, ['delete', 'namespace', ns, '--wait=false']);
      }
    });
  }

  it("refuses with a plugin pod's own token every write beyond its node and its code's, and lets those through", async () => {
    const ns = 'fakegpu-rbac-token';
    const { list } = rbacOf(e, 'tok', ns, ['--set', 'fleet.enabled=true']);
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-rbac-'));
    await freshNamespace(e, ns);
    try {
      mustKubectl(e, ['apply', '-f', '-'], list);
      for (const n of [OWN, OTHER]) mustKubectl(e, ['create', '-f', '-'], node(n));
      mustKubectl(e, ['create', '-f', '-'], pod('tok-plugin-pod', ns, OWN, 'tok-plugin'));
      mustKubectl(e, ['create', '-f', '-'], pod('tok-victim', ns, OTHER, 'tok-plugin'));
      // The token a plugin pod on OWN gets: the API server adds the pod's node to its user's extra.
      const token = podToken(e, ns, 'tok-plugin', 'tok-plugin-pod');
      const path = tokenConfig(e, dir, 'plugin.json', token);
      const plugin = (args: string[], input?: string): Result =>
        kubectl({ ...e, KUBECONFIG: path }, args, input);
      // Pods and faults as the plugin's own client writes them: kubectl would read them first, and the
      // plugin may not get them.
      const pluginApi = writerOf(path);
      const podPath = (name: string, n = ns) => `/api/v1/namespaces/${n}/pods/${name}`;
      const who = JSON.parse(mustKubectl({ ...e, KUBECONFIG: path }, ['auth', 'whoami', '-o', 'json'])) as {
        status: { userInfo: { extra?: Record<string, string[]> } };
      };
      assert.deepEqual(who.status.userInfo.extra?.['authentication.kubernetes.io/node-name'], [OWN]);

      const mine = `the fakegpu plugin on node ${OWN}`;
      // Admission picks the new policy up a moment later: a slice of another node is what every
      // version of it refuses.
      await eventually('the policy to refuse another node', () => {
        const r = plugin(['create', '-f', '-'], slice('rbac-node-other', OTHER, OTHER));
        return r.code !== 0 && r.err.includes(`${mine} may not write ResourceSlices of node`)
          ? true
          : undefined;
      });
      gaps.length = 0;

      // Nodes: only its own, only the labels its code writes.
      refused(
        plugin(['label', 'node', OTHER, `${GPU_CLIQUE_LABEL}=x.1`]),
        "another node's owned label",
        /may not write node/,
      );
      refused(plugin(['taint', 'node', OTHER, 'k=v:NoSchedule']), 'taint another node', /may not write node/);
      refused(
        plugin(['label', 'node', OTHER, 'keep=x', '--overwrite']),
        'relabel another node',
        /may not write node/,
      );
      const onlyLabels = new RegExp(
        `${mine} may change only the labels ${DOMAIN_LABEL}, ${GPU_CLIQUE_LABEL}`,
      );
      refused(plugin(['taint', 'node', OWN, 'k=v:NoSchedule']), 'taint its node', onlyLabels);
      // Not `kubectl cordon`: it exits 0 on a refusal.
      const cordon = JSON.stringify({ spec: { unschedulable: true } });
      refused(plugin(['patch', 'node', OWN, '-p', cordon]), 'cordon its node', onlyLabels);
      refused(plugin(['label', 'node', OWN, 'keep=x', '--overwrite']), "its node's other label", onlyLabels);
      refused(plugin(['label', 'node', OWN, 'keep-']), "remove its node's other label", onlyLabels);
      allowed(
        plugin(['label', 'node', OWN, `${GPU_CLIQUE_LABEL}=c.1`, `${DOMAIN_LABEL}=rbac-domain`]),
        'own labels',
      );
      allowed(plugin(['label', 'node', OWN, `${DOMAIN_LABEL}-`]), 'own label removed');

      // Pods: only its node's IMEX daemon pods, only their clique label.
      const labels = (l: Record<string, string>) => ({ metadata: { labels: l } });
      const pluginPatch = (path: string, body: object) => attempt(pluginApi.patch(path, body));
      refused(
        await attempt(pluginApi.image(podPath('tok-victim'))),
        "another node's pod's image",
        /may write only the IMEX daemon pods of its node, not pod/,
      );
      refused(
        await pluginPatch(podPath('tok-victim'), labels({ [CLIQUE_LABEL]: 'c.1' })),
        "another node's pod's clique",
        /may write only the IMEX daemon pods of its node/,
      );
      const onlyClique = new RegExp(`may change only the label ${CLIQUE_LABEL} of an IMEX daemon pod`);
      refused(
        await attempt(pluginApi.image(podPath('tok-plugin-pod'))),
        "its node's pod's image",
        onlyClique,
      );
      refused(
        await pluginPatch(podPath('tok-plugin-pod'), labels({ extra: 'x' })),
        "its node's pod's other label",
        onlyClique,
      );
      refused(await attempt(pluginApi.image(podPath('x', 'default'))), 'a pod elsewhere', /forbidden/);
      allowed(
        await pluginPatch(podPath('tok-plugin-pod'), labels({ [CLIQUE_LABEL]: 'c.1' })),
        'its daemon pod clique',
      );

      // Slices: node and pool are its node.
      refused(
        plugin(['create', '-f', '-'], slice('rbac-pool-other', OWN, OTHER)),
        "a slice in another node's pool",
        new RegExp(
          `${mine} may not write ResourceSlices of pool ${OTHER}: its pools are named after its node`,
        ),
      );
      allowed(plugin(['create', '-f', '-'], slice('rbac-pool-own', OWN, OWN)), 'its own slice');

      // GpuFault status: its node's entry only.
      mustKubectl(
        e,
        ['create', '-f', '-'],
        JSON.stringify({
          apiVersion: 'fakegpu.dev/v1alpha1',
          kind: 'GpuFault',
          metadata: { name: 'rbac-fault' },
          spec: {
            nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'fakegpu-rbac-nowhere' } },
            fault: { type: 'Xid', xid: 79 },
          },
        }),
      );
      const faultStatus = '/apis/fakegpu.dev/v1alpha1/gpufaults/rbac-fault/status';
      const entry = (n: string, v: object | null) => ({ status: { nodes: { [n]: v } } });
      const some = { devices: [], observedGeneration: 1 };
      // What another writer wrote, set as the cluster's admin.
      const adminPatch = (body: object): void => {
        mustKubectl(e, [
          'patch',
          'gpufault',
          'rbac-fault',
          '--subresource',
          'status',
          '--type',
          'merge',
          '-p',
          JSON.stringify(body),
        ]);
      };
      adminPatch(entry(OTHER, some));
      const onlyOwnEntry = new RegExp(`${mine} may write only its own node's entry`);
      refused(
        await pluginPatch(faultStatus, entry(OTHER, { ...some, observedGeneration: 2 })),
        "another node's entry",
        onlyOwnEntry,
      );
      refused(
        await pluginPatch(faultStatus, entry(OTHER, null)),
        "another node's entry removed",
        onlyOwnEntry,
      );
      allowed(await pluginPatch(faultStatus, entry(OWN, some)), 'its own entry');
      // The writers' counts, by node name, under the same rule.
      const counts = (n: string, v: object | null) => ({ status: { writers: { [n]: v } } });
      adminPatch(counts(OTHER, { nodes: 1, devices: 1 }));
      const onlyOwnCounts = new RegExp(`${mine} may write only its own node's counts`);
      refused(
        await pluginPatch(faultStatus, counts(OTHER, { nodes: 0, devices: 0 })),
        "another node's counts",
        onlyOwnCounts,
      );
      refused(
        await pluginPatch(faultStatus, counts(OTHER, null)),
        "another node's counts removed",
        onlyOwnCounts,
      );
      allowed(
        await pluginPatch(faultStatus, {
          status: { ...entry(OWN, some).status, ...counts(OWN, { nodes: 1, devices: 0 }).status },
        }),
        'its own entry and counts, as its code writes them',
      );

      // Events: only about a pod, in that pod's namespace.
      const event = (kind: string, name: string, namespace?: string): string =>
        JSON.stringify(
          warningEvent({
            regarding: { apiVersion: 'v1', kind, name, ...(namespace ? { namespace } : {}) },
            reason: 'FakegpuLoadInvalid',
            action: 'ReportGpuMetrics',
            note: 'rbac test',
            component: 'plugin',
          }),
        );
      const events = /may create only its own events about a Pod in the event's namespace/;
      refused(
        plugin(['create', '-n', 'default', '-f', '-'], event('Pod', 'tok-plugin-pod', ns)),
        'an event in another namespace',
        events,
      );
      refused(
        plugin(['create', '-n', 'default', '-f', '-'], event('Node', OTHER)),
        'an event on a node',
        events,
      );
      allowed(plugin(['create', '-n', ns, '-f', '-'], event('Pod', 'tok-plugin-pod', ns)), 'its event');

      // The fleet serves many nodes (no token names one), but it too writes only the labels it owns.
      const fleetToken = mustKubectl(e, ['create', 'token', 'tok-fleet', '-n', ns, '--duration', '10m']);
      const fleetPath = tokenConfig(e, dir, 'fleet.json', fleetToken.trim());
      const fleet = (args: string[]): Result => kubectl({ ...e, KUBECONFIG: fleetPath }, args);
      const fleetApi = writerOf(fleetPath);
      const onlyFleet = /the fakegpu fleet may change only the labels/;
      refused(fleet(['taint', 'node', OTHER, 'fleet=v:NoSchedule']), 'fleet taints a node', onlyFleet);
      refused(fleet(['label', 'node', OTHER, 'keep=x', '--overwrite']), 'fleet relabels a node', onlyFleet);
      refused(await attempt(fleetApi.image(podPath('tok-plugin-pod'))), 'fleet changes an image', onlyFleet);
      allowed(
        fleet(['label', 'node', OTHER, `${GPU_CLIQUE_LABEL}=c.2`, '--overwrite']),
        'fleet clique label',
      );
      allowed(
        await attempt(fleetApi.patch(podPath('tok-victim'), labels({ [CLIQUE_LABEL]: 'c.2' }))),
        'fleet daemon pod label',
      );
      assert.deepEqual(gaps, []);
    } finally {
      kubectl(e, [
        'delete',
        'resourceslice',
        'rbac-pool-own',
        'rbac-pool-other',
        'rbac-node-other',
        '--ignore-not-found',
      ]);
      kubectl(e, ['delete', 'gpufault', 'rbac-fault', '--ignore-not-found']);
      // No kubelet runs these nodes' pods: nothing else would finish their deletion.
      kubectl(e, ['delete', 'pod', '--all', '-n', ns, '--force', '--grace-period=0']);
      kubectl(e, ['delete', 'node', OWN, OTHER, '--ignore-not-found']);
      kubectl(e, ['delete', '--ignore-not-found', '--wait=false', '-f', '-'], list);
      kubectl(e, ['delete', 'namespace', ns, '--wait=false']);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses another claim's allocation or reservedFor, another driver's or node's device status, and lets the NIC entries through", async () => {
    const checks = await claimStatusChecks(e, 'fakegpu-rbac-claims');
    const wrong = checks.filter((c) => c.outcome.startsWith('ALLOWED') || c.outcome.startsWith('REFUSED'));
    assert.deepEqual(wrong, []);
    // This release checks the allocation and the drivers itself (1.36+); the policy holds the pool.
    const by = Object.fromEntries(checks.map((c) => [c.what, c.outcome]));
    assert.equal(by["plugin: a pending claim's allocation"], 'api-server');
    assert.equal(by["plugin: another driver's entry"], 'api-server');
    assert.equal(by["plugin: another node's pool"], 'policy');
  });
});
