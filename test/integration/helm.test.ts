import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { FLEET_MALLOC_ENV, FLEET_NODE_FLAGS, type Exports } from '../../src/local-cluster/cluster.js';
import { CHANNEL_CLASS, DAEMON_CLASS } from '../../src/model/compute-domain/slice.js';
import { parsePools } from '../../src/fleet/pools.js';
import { eventually, kubectl, mustKubectl, TEST_NODE, testCluster, type Result } from '../support/cluster.js';
import { CHART as chart, helm, template } from '../support/helm.js';

interface Container {
  name: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  securityContext?: unknown;
  livenessProbe?: unknown;
  readinessProbe?: unknown;
  ports?: { name: string; containerPort: number }[];
}

interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  spec?: {
    replicas?: number;
    template?: { spec: { containers: Container[] } };
    matchConditions?: { name: string; expression: string }[];
    policyName?: string;
    validationActions?: string[];
  };
}

/** What a Job's spec says of retries. */
interface JobDoc {
  spec: { backoffLimit?: number; template: { spec: { restartPolicy?: string } } };
}

function objects(yaml: string): Doc[] {
  return parseAllDocuments(yaml).map((d) => d.toJS() as Doc);
}

function mustResult(r: Result): string {
  assert.equal(r.code, 0, r.err);
  return r.out;
}

/** The one container of the workload of this kind (and name). */
function container(all: Doc[], kind: string, name?: string): Container {
  const c = all.find((d) => d.kind === kind && (name === undefined || d.metadata.name === name))?.spec
    ?.template?.spec.containers[0];
  assert.ok(c, `a ${kind} ${name ?? ''} with a container`);
  return c;
}

/** A container's plain environment variables, by name. */
function envOf(c: Container): Map<string, string | undefined> {
  return new Map((c.env ?? []).map((v) => [v.name, v.value]));
}

/**
 * A Helm hook's objects (its account, role, binding and Job) in rendered output: all four, each annotated
 * for `phase`, removed once it succeeds, and the account and its rights weighted before the Job.
 */
function hookObjects(out: string, name: string, phase: string): Doc[] {
  const hook = parseAllDocuments(out)
    .map((d) => d.toJS() as Doc & { metadata: { annotations?: Record<string, string> } })
    .filter((d) => d.metadata.name === name);
  assert.deepEqual(hook.map((d) => d.kind).sort(), [
    'ClusterRole',
    'ClusterRoleBinding',
    'Job',
    'ServiceAccount',
  ]);
  for (const d of hook) {
    const a = d.metadata.annotations ?? {};
    assert.equal(a['helm.sh/hook'], phase, d.kind);
    assert.equal(a['helm.sh/hook-delete-policy'], 'before-hook-creation,hook-succeeded');
    assert.equal(a['helm.sh/hook-weight'], d.kind === 'Job' ? '0' : '-1', d.kind);
  }
  return hook;
}

/**
 * A hook's RBAC applied for real in `ns` (without its Job, whose image the test cluster lacks), and `can`
 * for its service account; everything is deleted afterwards.
 */
function withHookAccount(
  e: Exports,
  out: string,
  name: string,
  ns: string,
  check: (can: (verb: string, resource: string) => string) => void,
): void {
  const rbac = out
    .split(/^---$/m)
    .filter((d) => new RegExp(`name: ${name}$`, 'm').test(d) && !/^kind: Job$/m.test(d))
    .join('---\n');
  kubectl(e, ['create', 'namespace', ns]);
  try {
    mustKubectl(e, ['apply', '-f', '-'], rbac);
    const as = `system:serviceaccount:${ns}:${name}`;
    check((verb, resource) => kubectl(e, ['auth', 'can-i', verb, resource, '--as', as]).out.trim());
  } finally {
    kubectl(e, ['delete', '--wait=false', '-f', '-'], rbac);
    kubectl(e, ['delete', 'namespace', ns, '--wait=false']);
  }
}

describe('Helm chart deploy/helm/fakegpu', () => {
  let e: Exports;
  before(async () => {
    e = await testCluster();
  });

  it('passes helm lint', () => {
    const r = helm(e, ['lint', chart, '--strict']);
    assert.equal(r.code, 0, r.out + r.err);
  });

  it('ships the GpuFault CRD in crds/, which Helm installs before the templates', () => {
    const r = helm(e, ['show', 'crds', chart]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^ {2}name: gpufaults\.fakegpu\.dev$/m);
  });

  it('renders objects the real API server accepts (server-side dry run)', () => {
    const r = template(e, [
      '--namespace',
      'fakegpu-system',
      '--set',
      'dynamicMig=true',
      '--set',
      'featureGates=TimeSlicingSettings=true',
    ]);
    assert.equal(r.code, 0, r.err);
    const kinds = parseAllDocuments(r.out)
      .map((d) => (d.toJS() as { kind: string }).kind)
      .sort();
    assert.deepEqual(kinds, [
      'ClusterRole',
      'ClusterRole',
      'ClusterRole',
      'ClusterRoleBinding',
      'ClusterRoleBinding',
      'ClusterRoleBinding',
      'DaemonSet',
      'Deployment',
      // gpu, mig, vfio (NVIDIA's chart renders it whatever PassthroughSupport says), dranet, two compute-domain
      'DeviceClass',
      'DeviceClass',
      'DeviceClass',
      'DeviceClass',
      'DeviceClass',
      'DeviceClass',
      'Job',
      'Role',
      'Role',
      'RoleBinding',
      'RoleBinding',
      'Service',
      'ServiceAccount',
      'ServiceAccount',
      'ServiceAccount',
      // The plugin's own node's slices, and claim status (claim-status-policy.yaml).
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
      'ValidatingAdmissionPolicyBinding',
    ]);
    // GPU metrics on dcgm-exporter's port, behind a Service whose port is named as in its chart.
    assert.match(r.out, /name: DCGM_ENDPOINT\n\s+value: ":9400"/);
    assert.match(r.out, /name: DCGM_EXPORTER_VERSION\n\s+value: "4.8.4"/);
    assert.match(r.out, /- name: metrics\n\s+port: 9400\n\s+targetPort: metrics/);
    kubectl(e, ['create', 'namespace', 'fakegpu-system']);
    const applied = kubectl(e, ['apply', '--dry-run=server', '-f', '-'], r.out);
    assert.equal(applied.code, 0, applied.err);
    assert.match(r.out, /name: FAKEGPU_DYNAMIC_MIG\n\s+value: "true"/);
    assert.match(r.out, /name: NIC_DRIVER_NAME\n\s+value: "dra.net"/);
    assert.match(r.out, /expression: "device.driver == 'dra.net'"/);
  });

  it('runs the plugin as root with MKNOD and nothing else, read-only, under RuntimeDefault seccomp', () => {
    const r = template(e);
    assert.equal(r.code, 0, r.err);
    const plugin = container(objects(r.out), 'DaemonSet');
    assert.deepEqual(plugin.securityContext, {
      runAsUser: 0,
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'], add: ['MKNOD'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    // A reset on every restart would forget running pods' claims, so it is opt-in.
    assert.equal(
      plugin.env?.find((v) => v.name === 'FAKEGPU_RESET_CHECKPOINT'),
      undefined,
      'no reset by default',
    );
  });

  it('renders plugin.resetCheckpoint=true as FAKEGPU_RESET_CHECKPOINT=true', () => {
    const r = template(e, ['--set', 'plugin.resetCheckpoint=true']);
    assert.equal(r.code, 0, r.err);
    const env = container(objects(r.out), 'DaemonSet').env ?? [];
    assert.deepEqual(
      env.filter((v) => v.name === 'FAKEGPU_RESET_CHECKPOINT'),
      [{ name: 'FAKEGPU_RESET_CHECKPOINT', value: 'true' }],
    );
  });

  it('renders path values and priorityClassName as given, quoted: a # or ": " in them is no YAML comment or map', () => {
    const cdi = '/var/run/cdi #2';
    const plugins = '/var/lib/kubelet/plugins: x';
    const r = template(e, [
      '--set-string',
      `cdiRoot=${cdi}`,
      '--set-string',
      `kubeletPluginsDir=${plugins}`,
      '--set-string',
      'priorityClassName=node #critical',
    ]);
    assert.equal(r.code, 0, r.err);
    const ds = objects(r.out).find((d) => d.kind === 'DaemonSet') as unknown as {
      spec: {
        template: {
          spec: {
            priorityClassName: unknown;
            volumes: { name: string; hostPath: { path: unknown } }[];
            containers: { volumeMounts: { name: string; mountPath: unknown }[] }[];
          };
        };
      };
    };
    const pod = ds.spec.template.spec;
    assert.equal(pod.priorityClassName, 'node #critical');
    const path = (name: string): unknown => pod.volumes.find((v) => v.name === name)?.hostPath.path;
    const mount = (name: string): unknown =>
      pod.containers[0]?.volumeMounts.find((m) => m.name === name)?.mountPath;
    assert.equal(path('cdi'), cdi);
    assert.equal(mount('cdi'), cdi);
    assert.equal(path('plugins'), plugins);
    assert.equal(mount('plugins'), plugins);
  });

  it('renders the Grafana dashboard ConfigMap only when asked, labelled for the sidecar, the API server accepting it', () => {
    const off = template(e);
    assert.equal(off.code, 0, off.err);
    assert.equal(
      objects(off.out).filter((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-grafana-dashboard'))
        .length,
      0,
    );
    const r = template(e, ['--set', 'dcgm.grafanaDashboard.enabled=true']);
    assert.equal(r.code, 0, r.err);
    type ConfigMap = Doc & { metadata: { labels?: Record<string, string> }; data?: Record<string, string> };
    const cm = (objects(r.out) as ConfigMap[]).find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-grafana-dashboard'),
    );
    assert.ok(cm);
    assert.equal(cm.metadata.labels?.['grafana_dashboard'], '1');
    const dashboard = JSON.parse(cm.data?.['fakegpu-gpus.json'] ?? '') as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    assert.deepEqual(
      JSON.parse(readFileSync(join(chart, 'dashboards', 'fakegpu-gpus.json'), 'utf8')),
      dashboard,
      'the file, whole',
    );
    assert.ok(dashboard.panels.length >= 10);
    for (const p of dashboard.panels)
      assert.match(p.targets[0]?.expr ?? '', /DCGM_FI_|fakegpu_scorecard_/, p.title);
    const applied = kubectl(e, ['apply', '--dry-run=server', '-n', 'default', '-f', '-'], JSON.stringify(cm));
    assert.equal(applied.code, 0, applied.err);
  });

  it("renders a PodMonitor of fakegpu's own metrics (the scorecard among them) only when asked", () => {
    const off = template(e);
    assert.equal(off.code, 0, off.err);
    assert.equal(objects(off.out).filter((o) => o.kind === 'PodMonitor').length, 0);
    const r = template(e, [
      '--set',
      'podMonitor.enabled=true',
      '--set',
      'podMonitor.additionalLabels.release=kps',
    ]);
    assert.equal(r.code, 0, r.err);
    type PodMonitor = Doc & {
      metadata: { labels?: Record<string, string> };
      spec: {
        selector: { matchLabels: Record<string, string> };
        podMetricsEndpoints: { port: string; path: string; interval: string }[];
      };
    };
    const monitors = objects(r.out).filter((o) => o.kind === 'PodMonitor') as PodMonitor[];
    assert.equal(monitors.length, 1);
    const m = monitors[0];
    assert.ok(m);
    assert.equal(m.metadata.labels?.['release'], 'kps');
    assert.deepEqual(m.spec.podMetricsEndpoints, [{ port: 'http', path: '/metrics', interval: '30s' }]);
    // Every pod it selects that serves /metrics names that port http: the plugin, the fleet, the controller.
    type Workload = {
      metadata: { name: string };
      spec: { template: { metadata: { labels: Record<string, string> }; spec: { containers: Container[] } } };
    };
    const pods = objects(r.out).filter((o) =>
      ['DaemonSet', 'Deployment'].includes(o.kind),
    ) as unknown as Workload[];
    assert.ok(pods.length >= 2);
    for (const p of pods) {
      const labels = p.spec.template.metadata.labels;
      assert.ok(
        Object.entries(m.spec.selector.matchLabels).every(([k, v]) => labels[k] === v),
        p.metadata.name,
      );
      assert.ok(
        p.spec.template.spec.containers.some((c) => c.ports?.some((x) => x.name === 'http')),
        p.metadata.name,
      );
    }
  });

  it('renders the health values as the plugin reads them: gates, extra ignored XIDs, the health service', () => {
    const r = template(e, [
      '--set',
      'featureGates=NVMLDeviceHealthCheck=true',
      '--set',
      'plugin.healthService=true',
      '--set-string',
      'plugin.additionalXidsToIgnore=48\\,79',
    ]);
    assert.equal(r.code, 0, r.err);
    const env = container(objects(r.out), 'DaemonSet').env ?? [];
    const names = ['FEATURE_GATES', 'ADDITIONAL_XIDS_TO_IGNORE', 'FAKEGPU_HEALTH_SERVICE'];
    assert.deepEqual(
      env.filter((v) => names.includes(v.name)),
      [
        { name: 'FEATURE_GATES', value: 'NVMLDeviceHealthCheck=true' },
        { name: 'ADDITIONAL_XIDS_TO_IGNORE', value: '48,79' },
        { name: 'FAKEGPU_HEALTH_SERVICE', value: 'true' },
      ],
    );
    const bad = helm(e, ['template', 'fakegpu', chart, '--set-string', 'plugin.additionalXidsToIgnore=x']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /\/plugin\/additionalXidsToIgnore/);
  });

  it("binds the admission policy to the plugin's service account only, and leaves it out when disabled", () => {
    const r = template(e, ['--namespace', 'ns1', '--set', 'fleet.enabled=true'], 'rel');
    assert.equal(r.code, 0, r.err);
    const all = objects(r.out);
    const policy = all.find((d) => d.kind === 'ValidatingAdmissionPolicy');
    assert.equal(policy?.metadata.name, 'rel-plugin-own-node');
    // The fleet (rel-fleet) writes many nodes' slices from a node of its own: it must not match.
    assert.deepEqual(policy.spec?.matchConditions, [
      {
        name: 'is-plugin',
        expression: 'request.userInfo.username == "system:serviceaccount:ns1:rel-plugin"',
      },
    ]);
    const binding = all.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding');
    assert.equal(binding?.spec?.policyName, 'rel-plugin-own-node');
    assert.deepEqual(binding.spec.validationActions, ['Deny']);
    const off = template(e, ['--set', 'plugin.admissionPolicy.enabled=false'], 'rel');
    assert.equal(off.code, 0, off.err);
    assert.deepEqual(
      objects(off.out).filter((d) => d.kind.startsWith('ValidatingAdmissionPolicy')),
      [],
    );
  });

  it("lets the plugin's account write its own node's slices and refuses every other node's (real API server)", async () => {
    const ns = 'fakegpu-vap';
    const sa = 'vap-plugin';
    const other = 'fakegpu-vap-elsewhere';
    const r = template(
      e,
      [
        '--namespace',
        ns,
        '--show-only',
        'templates/rbac.yaml',
        '--show-only',
        'templates/admission-policy.yaml',
      ],
      'vap',
    );
    assert.equal(r.code, 0, r.err);
    // A driver no DeviceClass selects: these slices must not feed the scheduler tests.
    const slice = (name: string, node: string): string =>
      JSON.stringify({
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceSlice',
        metadata: { name },
        spec: {
          driver: 'vap.fakegpu.dev',
          nodeName: node,
          pool: { name: node, generation: 1, resourceSliceCount: 1 },
          devices: [{ name: 'gpu-0' }],
        },
      });
    const names = ['vap-own', 'vap-other', 'vap-unbound'];
    const dir = mkdtempSync(join(tmpdir(), 'fakegpu-vap-'));
    kubectl(e, ['create', 'namespace', ns]);
    try {
      mustKubectl(e, ['apply', '-f', '-'], r.out);
      // The API server puts the node's name in the user's extra only for tokens bound to a Node (or
      // to a Pod on one, as the DaemonSet's pods get): the policy reads it from there.
      const uid = mustKubectl(e, ['get', 'node', TEST_NODE, '-o', 'jsonpath={.metadata.uid}']);
      const nodeToken = mustKubectl(e, [
        'create',
        'token',
        sa,
        '-n',
        ns,
        '--duration',
        '10m',
        '--bound-object-kind',
        'Node',
        '--bound-object-name',
        TEST_NODE,
        '--bound-object-uid',
        uid,
      ]).trim();
      const plainToken = mustKubectl(e, ['create', 'token', sa, '-n', ns, '--duration', '10m']).trim();
      // The admin kubeconfig without its client certificate, which the API server would prefer.
      const as = (token: string, file: string): ((args: string[], input?: string) => Result) => {
        const config = JSON.parse(
          mustKubectl(e, ['config', 'view', '--raw', '--minify', '--flatten', '-o', 'json']),
        ) as {
          users: { name: string; user: Record<string, unknown> }[];
        };
        for (const u of config.users) u.user = { token };
        const path = join(dir, file);
        writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
        return (args, input) => kubectl({ ...e, KUBECONFIG: path }, args, input);
      };
      const plugin = as(nodeToken, 'node.json');
      const unbound = as(plainToken, 'plain.json');
      const who = JSON.parse(mustResult(plugin(['auth', 'whoami', '-o', 'json']))) as {
        status: { userInfo: { username: string; extra?: Record<string, string[]> } };
      };
      assert.equal(who.status.userInfo.username, `system:serviceaccount:${ns}:${sa}`);
      assert.deepEqual(who.status.userInfo.extra?.['authentication.kubernetes.io/node-name'], [TEST_NODE]);

      // Admission (and RBAC) pick new objects up from their informers a moment later.
      const denial = new RegExp(
        `ValidatingAdmissionPolicy 'vap-plugin-own-node' with binding 'vap-plugin-own-node' denied request: ` +
          `the fakegpu plugin on node ${TEST_NODE} may not write ResourceSlices of node ${other}`,
      );
      let last = '';
      try {
        await eventually('the policy to refuse another node', () => {
          const w = plugin(['create', '-f', '-'], slice('vap-other', other));
          last = w.code === 0 ? 'created' : w.err;
          if (w.code === 0) kubectl(e, ['delete', 'resourceslice', 'vap-other']);
          return denial.test(w.err) ? true : undefined;
        });
      } catch (err) {
        throw new Error(`${String(err)}; last attempt: ${last}`, { cause: err });
      }

      // GpuFaults: list and watch them all, patch only their status (its node's entry: rbac.test.ts).
      const canPlugin = (verb: string, resource: string, sub?: string): string =>
        kubectl(e, [
          'auth',
          'can-i',
          verb,
          resource,
          '--as',
          `system:serviceaccount:${ns}:${sa}`,
          ...(sub ? ['--subresource', sub] : []),
        ]).out.trim();
      for (const v of ['list', 'watch'])
        assert.equal(canPlugin(v, 'gpufaults.fakegpu.dev'), 'yes', `${v} gpufaults`);
      assert.equal(canPlugin('patch', 'gpufaults.fakegpu.dev', 'status'), 'yes', 'patch gpufaults/status');
      // GPU metrics: the pods of its node (a field selector RBAC cannot express), events on bad ones.
      for (const v of ['list', 'watch']) assert.equal(canPlugin(v, 'pods'), 'yes', `${v} pods`);
      assert.equal(canPlugin('create', 'events.events.k8s.io'), 'yes', 'create events');
      assert.equal(canPlugin('delete', 'pods'), 'no', 'delete pods');
      for (const v of ['create', 'update', 'patch', 'delete'])
        assert.equal(canPlugin(v, 'gpufaults.fakegpu.dev'), 'no', `${v} gpufaults`);

      // Its own node: create, update and delete all pass.
      const own = plugin(['create', '-f', '-'], slice('vap-own', TEST_NODE));
      assert.equal(own.code, 0, own.err);
      // An update as the plugin writes one (a PUT: it may not get slices, as kubectl label would).
      const touched = (name: string): string => {
        const s = JSON.parse(mustKubectl(e, ['get', 'resourceslice', name, '-o', 'json'])) as {
          metadata: { labels?: Record<string, string> };
        };
        s.metadata.labels = { ...s.metadata.labels, 'fakegpu.dev/touched': 'yes' };
        return JSON.stringify(s);
      };
      const label = plugin(['replace', '-f', '-'], touched('vap-own'));
      assert.equal(label.code, 0, label.err);
      const del = plugin(['delete', 'resourceslice', 'vap-own']);
      assert.equal(del.code, 0, del.err);

      // Another node's slice, written by someone the policy does not bind: the plugin may neither
      // change nor delete it.
      mustKubectl(e, ['create', '-f', '-'], slice('vap-other', other));
      const relabel = plugin(['replace', '-f', '-'], touched('vap-other'));
      assert.notEqual(relabel.code, 0, "update of another node's slice");
      assert.match(relabel.err, new RegExp(`may not write ResourceSlices of node ${other}`));
      const steal = plugin(['delete', 'resourceslice', 'vap-other']);
      assert.notEqual(steal.code, 0, "delete of another node's slice");
      assert.match(steal.err, new RegExp(`may not write ResourceSlices of node ${other}`));
      assert.equal(kubectl(e, ['get', 'resourceslice', 'vap-other']).code, 0, 'still there');

      // A token that names no node writes nothing, not even for the node it claims.
      const orphan = unbound(['create', '-f', '-'], slice('vap-unbound', TEST_NODE));
      assert.notEqual(orphan.code, 0, 'write with a token bound to no node');
      assert.match(orphan.err, /this service account's token names no node/);
    } finally {
      kubectl(e, ['delete', 'resourceslice', ...names, '--ignore-not-found']);
      kubectl(e, ['delete', '--ignore-not-found', '-f', '-'], r.out);
      kubectl(e, ['delete', 'namespace', ns, '--wait=false']);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves the NIC driver and its class out when nics.enabled is false', () => {
    const r = template(e, ['--set', 'nics.enabled=false']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /name: FAKEGPU_NO_NICS\n\s+value: "true"/);
    assert.doesNotMatch(r.out, /name: dranet/);
  });

  it('deploys the fleet with its pools map, RBAC enough for what it does, and nothing more', () => {
    const r = template(
      e,
      [
        '--namespace',
        'fakegpu-fleet',
        '--set',
        'fleet.enabled=true',
        '--set',
        'fleet.pools.h100.profile=dgx-h100',
        '--set',
        'fleet.pools.mig.profile=dgx-a100',
        '--set',
        'fleet.pools.mig.dynamicMig=true',
        '--set',
        'fleet.qps=50',
      ],
      'fleet',
    );
    assert.equal(r.code, 0, r.err);
    const docs = parseAllDocuments(r.out).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string }; data?: Record<string, string> },
    );
    const fleet = docs.filter((d) => d.metadata.name.startsWith('fleet-fleet'));
    assert.deepEqual(fleet.map((d) => d.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'Deployment',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    // The mounted map is a pools file the fleet accepts.
    const text = fleet.find((d) => d.kind === 'ConfigMap')?.data?.['pools.yaml'] ?? '';
    const pools = parsePools(text, 'ConfigMap fleet-fleet-pools');
    assert.equal(pools.label, 'fakegpu.dev/pool');
    assert.equal(pools.byName.get('mig')?.dynamicMig, true);
    assert.equal(pools.byName.get('h100')?.profile.name, 'dgx-h100');
    assert.match(r.out, /name: FAKEGPU_POOLS\n\s+value: "\/etc\/fakegpu\/pools.yaml"/);
    assert.match(r.out, /name: FAKEGPU_FLEET_QPS\n\s+value: "50"/);
    // The pod's Node runs as the local cluster and the benchmark run the fleet.
    const env = new Map(
      (
        fleet.find((d) => d.kind === 'Deployment') as unknown as {
          spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
        }
      ).spec.template.spec.containers[0]?.env.map((v) => [v.name, v.value]),
    );
    assert.equal(env.get('NODE_OPTIONS'), FLEET_NODE_FLAGS.join(' '));
    for (const [k, v] of Object.entries(FLEET_MALLOC_ENV)) assert.equal(env.get(k), v, k);
    assert.deepEqual(container(objects(r.out), 'Deployment', 'fleet-fleet').securityContext, {
      runAsNonRoot: true,
      runAsUser: 65534,
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    // Applied for real (the Deployment's image cannot be built here, so its pod is not started):
    // the service account may do what the fleet does and no more.
    kubectl(e, ['create', 'namespace', 'fakegpu-fleet']);
    const applied = kubectl(e, ['apply', '-f', '-'], r.out);
    assert.equal(applied.code, 0, applied.err);
    const as = 'system:serviceaccount:fakegpu-fleet:fleet-fleet';
    const can = (verb: string, resource: string): string =>
      kubectl(e, ['auth', 'can-i', verb, resource, '--as', as]).out.trim();
    for (const v of ['list', 'watch', 'get']) assert.equal(can(v, 'nodes'), 'yes', `${v} nodes`);
    for (const v of ['list', 'watch', 'create', 'update', 'delete'])
      assert.equal(can(v, 'resourceslices.resource.k8s.io'), 'yes', `${v} resourceslices`);
    assert.equal(can('create', 'events.events.k8s.io'), 'yes');
    for (const v of ['list', 'watch']) assert.equal(can(v, 'gpufaults.fakegpu.dev'), 'yes', `${v} gpufaults`);
    assert.equal(
      kubectl(e, [
        'auth',
        'can-i',
        'patch',
        'gpufaults.fakegpu.dev',
        '--subresource',
        'status',
        '--as',
        as,
      ]).out.trim(),
      'yes',
      'patch gpufaults/status',
    );
    for (const v of ['create', 'patch', 'delete'])
      assert.equal(can(v, 'gpufaults.fakegpu.dev'), 'no', `${v} gpufaults`);
    assert.equal(can('update', 'nodes'), 'no');
    assert.equal(can('get', 'resourceclaims.resource.k8s.io'), 'no');
    // GPU metrics (dcgm.enabled, on by default): who holds each GPU, from claims and the pods using them.
    for (const v of ['list', 'watch']) {
      assert.equal(can(v, 'resourceclaims.resource.k8s.io'), 'yes', `${v} resourceclaims`);
      assert.equal(can(v, 'pods'), 'yes', `${v} pods`);
    }
    assert.equal(can('get', 'pods'), 'no');
    assert.equal(can('list', 'secrets'), 'no');
    // ComputeDomains (on by default): its nodes' labels from the claims and domains it lists, and in the
    // driver's namespace the IMEX daemon pods' labels and their clique entries.
    assert.equal(env.get('FAKEGPU_NO_COMPUTE_DOMAINS'), undefined);
    assert.equal(can('patch', 'nodes'), 'yes');
    assert.equal(can('list', 'resourceclaims.resource.k8s.io'), 'yes');
    for (const v of ['get', 'list']) assert.equal(can(v, 'computedomains.resource.nvidia.com'), 'yes', v);
    assert.equal(can('patch', 'computedomains.resource.nvidia.com'), 'no');
    const canIn = (ns: string, verb: string, resource: string): string =>
      kubectl(e, ['auth', 'can-i', verb, resource, '-n', ns, '--as', as]).out.trim();
    for (const v of ['list', 'patch']) assert.equal(canIn('fakegpu-fleet', v, 'pods'), 'yes', `${v} pods`);
    for (const v of ['create', 'update', 'delete'])
      assert.equal(canIn('fakegpu-fleet', v, 'computedomaincliques.resource.nvidia.com'), 'yes', v);
    assert.equal(canIn('default', 'patch', 'pods'), 'no', "pods outside the driver's namespace");
    kubectl(e, ['delete', '--wait=false', '-f', '-'], r.out);
    kubectl(e, ['delete', 'namespace', 'fakegpu-fleet', '--wait=false']);
  });

  it("after uninstall, deletes the fleet's slices with a post-delete Job of the fleet's scope, whose account may do only that", () => {
    const r = template(
      e,
      ['--namespace', 'fakegpu-cleanup', '--set', 'fleet.enabled=true', '--set', 'fleet.nics=true'],
      'gone',
    );
    assert.equal(r.code, 0, r.err);
    hookObjects(r.out, 'gone-slice-cleanup', 'post-delete');
    const all = objects(r.out);
    const job = container(all, 'Job', 'gone-slice-cleanup');
    const fleet = container(all, 'Deployment', 'gone-fleet');
    assert.deepEqual(job.args, ['fleet', '--delete-slices']);
    assert.deepEqual(job.securityContext, fleet.securityContext);
    // The same nodes and drivers as the fleet's: it deletes what that fleet published, nothing else.
    const jobEnv = envOf(job);
    const fleetEnv = envOf(fleet);
    for (const k of [
      'FAKEGPU_PROFILE_LABEL',
      'DRIVER_NAME',
      'FAKEGPU_NICS',
      'NIC_DRIVER_NAME',
      'FAKEGPU_NO_COMPUTE_DOMAINS',
    ])
      assert.equal(jobEnv.get(k), fleetEnv.get(k), k);
    assert.equal(jobEnv.get('NIC_DRIVER_NAME'), 'dra.net');
    withHookAccount(e, r.out, 'gone-slice-cleanup', 'fakegpu-cleanup', (can) => {
      assert.equal(can('list', 'nodes'), 'yes');
      for (const v of ['list', 'delete']) assert.equal(can(v, 'resourceslices.resource.k8s.io'), 'yes', v);
      for (const v of ['create', 'update']) assert.equal(can(v, 'resourceslices.resource.k8s.io'), 'no', v);
      assert.equal(can('patch', 'nodes'), 'no');
    });
  });

  it('before uninstall, refuses it while pods hold devices on plugin nodes, with a pre-delete Job of the drivers that may only list', () => {
    const r = template(e, ['--namespace', 'fakegpu-guard'], 'guard');
    assert.equal(r.code, 0, r.err);
    const hook = hookObjects(r.out, 'guard-uninstall-check', 'pre-delete');
    const jobSpec = (hook.find((d) => d.kind === 'Job') as unknown as JobDoc | undefined)?.spec;
    // A refusal is an answer: retrying it would only delay the uninstall's failure.
    assert.equal(jobSpec?.backoffLimit, 0);
    assert.equal(jobSpec.template.spec.restartPolicy, 'Never');
    const all = objects(r.out);
    const job = container(all, 'Job', 'guard-uninstall-check');
    assert.deepEqual(job.args, ['uninstall-check']);
    const fleet = container(
      objects(template(e, ['--set', 'fleet.enabled=true'], 'guard').out),
      'Deployment',
      'guard-fleet',
    );
    assert.deepEqual(job.securityContext, fleet.securityContext);
    // The plugin's drivers: NICs and compute domains on by default.
    assert.deepEqual(
      envOf(job),
      new Map([
        ['DRIVER_NAME', 'gpu.nvidia.com'],
        ['NIC_DRIVER_NAME', 'dra.net'],
      ]),
    );
    const off = container(
      objects(
        template(
          e,
          [
            '--set',
            'nics.enabled=false',
            '--set',
            'resources.computeDomains.enabled=false',
            '--set',
            'driverName=gpu.example.com',
          ],
          'guard',
        ).out,
      ),
      'Job',
      'guard-uninstall-check',
    );
    assert.deepEqual(
      envOf(off),
      new Map([
        ['DRIVER_NAME', 'gpu.example.com'],
        ['FAKEGPU_NO_NICS', 'true'],
        ['FAKEGPU_NO_COMPUTE_DOMAINS', 'true'],
      ]),
    );
    const none = template(e, ['--set', 'uninstallCheck.enabled=false'], 'guard');
    assert.equal(none.code, 0, none.err);
    assert.doesNotMatch(none.out, /uninstall-check/);
    withHookAccount(e, r.out, 'guard-uninstall-check', 'fakegpu-guard', (can) => {
      assert.equal(can('list', 'nodes'), 'yes');
      assert.equal(can('list', 'resourceclaims.resource.k8s.io'), 'yes');
      for (const v of ['update', 'delete']) assert.equal(can(v, 'resourceclaims.resource.k8s.io'), 'no', v);
      assert.equal(can('list', 'pods'), 'no');
      assert.equal(can('patch', 'nodes'), 'no');
    });
  });

  it('runs the ComputeDomain controller in the release namespace, with the daemon image and its probes', () => {
    const r = template(
      e,
      [
        '--namespace',
        'fakegpu-cd',
        '--set',
        'image.repository=registry.example/fakegpu',
        '--set',
        'image.tag=1.2.3',
      ],
      'cd',
    );
    assert.equal(r.code, 0, r.err);
    const all = objects(r.out);
    const mine = all.filter((d) => d.metadata.name === 'cd-compute-domain-controller');
    assert.deepEqual(mine.map((d) => d.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'Role',
      'RoleBinding',
      'ServiceAccount',
    ]);
    const deployment = mine.find((d) => d.kind === 'Deployment');
    assert.equal(deployment?.spec?.replicas, 1);
    const c = container(all, 'Deployment', 'cd-compute-domain-controller');
    assert.deepEqual(c.args, ['compute-domain-controller']);
    // The driver's namespace is the pod's own, that is the release's.
    assert.deepEqual(
      c.env?.find((v) => v.name === 'POD_NAMESPACE'),
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    );
    const env = envOf(c);
    // By default the daemons run the chart's own image, which carries compute-domain-daemon.
    assert.equal(env.get('FAKEGPU_DAEMON_IMAGE'), 'registry.example/fakegpu:1.2.3');
    assert.equal(env.get('FAKEGPU_IMAGE_PULL_POLICY'), 'IfNotPresent');
    assert.equal(env.get('HTTP_ENDPOINT'), ':51518');
    assert.deepEqual(c.livenessProbe, { httpGet: { path: '/healthz', port: 'http' } });
    assert.deepEqual(c.readinessProbe, { httpGet: { path: '/readyz', port: 'http' } });
    assert.deepEqual(c.securityContext, {
      runAsNonRoot: true,
      runAsUser: 65534,
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    for (const d of mine.filter((x) => x.kind === 'Role' || x.kind === 'RoleBinding'))
      assert.equal(d.metadata.namespace, 'fakegpu-cd', `${d.kind} in the driver's namespace`);
    const classes = all.filter((d) => d.kind === 'DeviceClass').map((d) => d.metadata.name);
    assert.ok(classes.includes(CHANNEL_CLASS) && classes.includes(DAEMON_CLASS), classes.join(', '));
    // The plugin learns the namespace the same way, and keeps its container resources without the switch.
    const plugin = container(all, 'DaemonSet');
    assert.deepEqual(
      plugin.env?.find((v) => v.name === 'POD_NAMESPACE'),
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    );
    assert.equal(envOf(plugin).has('FAKEGPU_NO_COMPUTE_DOMAINS'), false);
    assert.equal(
      envOf(plugin).has('FAKEGPU_GPU_CLIQUE_LABEL'),
      false,
      "NVIDIA's gpuCliqueLabelEnabled is off",
    );
    assert.doesNotMatch(r.out, /^\s+computeDomains:/m);

    const custom = template(
      e,
      [
        '--set',
        'computeDomains.daemonImage.repository=registry.example/imex',
        '--set-string',
        'computeDomains.daemonImage.tag=7',
        '--set',
        'computeDomains.daemonImage.pullPolicy=Always',
        '--set',
        'computeDomains.gpuCliqueLabel=true',
      ],
      'cd',
    );
    assert.equal(custom.code, 0, custom.err);
    const customEnv = envOf(container(objects(custom.out), 'Deployment', 'cd-compute-domain-controller'));
    assert.equal(customEnv.get('FAKEGPU_DAEMON_IMAGE'), 'registry.example/imex:7');
    assert.equal(customEnv.get('FAKEGPU_IMAGE_PULL_POLICY'), 'Always');
    assert.equal(envOf(container(objects(custom.out), 'DaemonSet')).get('FAKEGPU_GPU_CLIQUE_LABEL'), 'true');
  });

  it("gives the ComputeDomain controller and the plugin what they do, in the driver's namespace where it lives", () => {
    const ns = 'fakegpu-cd-rbac';
    const r = template(
      e,
      [
        '--namespace',
        ns,
        '--show-only',
        'templates/rbac.yaml',
        '--show-only',
        'templates/compute-domain-controller.yaml',
      ],
      'cdr',
    );
    assert.equal(r.code, 0, r.err);
    // Its accounts and RBAC only: the controller's image cannot be built here.
    const rbac = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: objects(r.out).filter((d) => d.kind !== 'Deployment'),
    });
    kubectl(e, ['create', 'namespace', ns]);
    try {
      mustKubectl(e, ['apply', '-f', '-'], rbac);
      const can = (
        sa: string,
        verb: string,
        resource: string,
        o: { ns?: string; sub?: string } = {},
      ): string =>
        kubectl(e, [
          'auth',
          'can-i',
          verb,
          resource,
          '--as',
          `system:serviceaccount:${ns}:${sa}`,
          ...(o.ns ? ['-n', o.ns] : []),
          ...(o.sub ? ['--subresource', o.sub] : []),
        ]).out.trim();
      const ctl = 'cdr-compute-domain-controller';
      const cd = 'computedomains.resource.nvidia.com';
      const cliques = 'computedomaincliques.resource.nvidia.com';
      const rcts = 'resourceclaimtemplates.resource.k8s.io';
      for (const v of ['get', 'list', 'watch', 'patch', 'update'])
        assert.equal(can(ctl, v, cd, { ns: 'default' }), 'yes', `controller ${v} computedomains`);
      for (const v of ['patch', 'update'])
        assert.equal(can(ctl, v, cd, { ns: 'default', sub: 'status' }), 'yes', `controller ${v} status`);
      assert.equal(can(ctl, 'delete', cd, { ns: 'default' }), 'no', 'controller delete computedomains');
      // The workload's claim template goes into the domain's namespace, any namespace.
      for (const v of ['get', 'list', 'create', 'delete', 'patch'])
        assert.equal(can(ctl, v, rcts, { ns: 'default' }), 'yes', `controller ${v} resourceclaimtemplates`);
      for (const v of ['get', 'list', 'patch'])
        assert.equal(can(ctl, v, 'nodes'), 'yes', `controller ${v} nodes`);
      for (const v of ['get', 'list', 'create', 'delete', 'patch'])
        assert.equal(can(ctl, v, 'daemonsets.apps', { ns }), 'yes', `controller ${v} daemonsets`);
      assert.equal(can(ctl, 'create', 'daemonsets.apps', { ns: 'default' }), 'no', 'daemonsets elsewhere');
      for (const v of ['get', 'list'])
        assert.equal(can(ctl, v, 'pods', { ns }), 'yes', `controller ${v} pods`);
      for (const v of ['get', 'list', 'create', 'update', 'delete'])
        assert.equal(can(ctl, v, cliques, { ns }), 'yes', `controller ${v} cliques`);
      assert.equal(can(ctl, 'list', 'secrets', { ns }), 'no');

      const plugin = 'cdr-plugin';
      for (const v of ['get', 'list'])
        assert.equal(can(plugin, v, cd, { ns: 'default' }), 'yes', `plugin ${v} cd`);
      assert.equal(can(plugin, 'patch', cd, { ns: 'default' }), 'no', 'plugin patch computedomains');
      assert.equal(can(plugin, 'patch', 'nodes'), 'yes', 'plugin patch nodes');
      for (const v of ['list', 'patch'])
        assert.equal(can(plugin, v, 'pods', { ns }), 'yes', `plugin ${v} pods`);
      assert.equal(
        can(plugin, 'patch', 'pods', { ns: 'default' }),
        'no',
        "pods outside the driver's namespace",
      );
      for (const v of ['get', 'list', 'create', 'update', 'delete'])
        assert.equal(can(plugin, v, cliques, { ns }), 'yes', `plugin ${v} cliques`);
    } finally {
      kubectl(e, ['delete', '--ignore-not-found', '-f', '-'], rbac);
      kubectl(e, ['delete', 'namespace', ns, '--wait=false']);
    }
  });

  it('leaves ComputeDomains out when resources.computeDomains.enabled is false, and turns the plugin and fleet side off', () => {
    const r = template(
      e,
      [
        '--set',
        'resources.computeDomains.enabled=false',
        '--set',
        'fleet.enabled=true',
        '--set',
        'computeDomains.gpuCliqueLabel=true',
      ],
      'off',
    );
    assert.equal(r.code, 0, r.err);
    const all = objects(r.out);
    assert.deepEqual(
      all.filter((d) => d.metadata.name.includes('compute-domain')),
      [],
    );
    // The fleet's Role keeps its election lease only, with `list` to see whether a sharded ring is live.
    assert.deepEqual(all.find((d) => d.kind === 'Role' && d.metadata.name === 'off-fleet')?.rules, [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'create', 'update'],
      },
    ]);
    assert.doesNotMatch(r.out, /resource\.nvidia\.com|compute-domain/);
    for (const [kind, name] of [
      ['DaemonSet', 'off-plugin'],
      ['Deployment', 'off-fleet'],
    ] as const) {
      const env = envOf(container(all, kind, name));
      assert.equal(env.get('FAKEGPU_NO_COMPUTE_DOMAINS'), 'true', name);
      assert.equal(env.has('POD_NAMESPACE'), false, name);
      assert.equal(env.has('FAKEGPU_GPU_CLIQUE_LABEL'), false, name);
    }
    const nodes = (role: string) =>
      all
        .find((d) => d.kind === 'ClusterRole' && d.metadata.name === role)
        ?.rules?.find((x) => x.resources.includes('nodes'))?.verbs;
    assert.deepEqual(nodes('off-plugin'), ['get']);
    assert.deepEqual(nodes('off-fleet'), ['get', 'list', 'watch']);
  });

  it("takes featureGates as NVIDIA's chart does, a map, and gives the plugin and the fleet the same FEATURE_GATES", () => {
    const r = template(
      e,
      [
        '--set',
        'featureGates.DRAListTypeAttributes=true',
        '--set',
        'featureGates.MPSSupport=false',
        '--set',
        'fleet.enabled=true',
      ],
      'gates',
    );
    assert.equal(r.code, 0, r.err);
    const all = objects(r.out);
    for (const [kind, name] of [
      ['DaemonSet', 'gates-plugin'],
      ['Deployment', 'gates-fleet'],
    ] as const)
      assert.equal(
        envOf(container(all, kind, name)).get('FEATURE_GATES'),
        'DRAListTypeAttributes=true,MPSSupport=false,',
        name,
      );
    const bad = helm(e, ['template', 'fakegpu', chart, '--set', 'featureGates.Turbo=true']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /featureGates/);
    // NVIDIA's rules that dynamicMig can break are refused when the chart renders, not by a crashing pod.
    const mps = template(e, [
      '--set',
      'dynamicMig=true',
      '--set',
      'featureGates=TimeSlicingSettings=true\\,MPSSupport=true',
    ]);
    assert.notEqual(mps.code, 0);
    assert.match(
      mps.err,
      /dynamicMig: feature gate DynamicMIG is currently mutually exclusive with MPSSupport \(featureGates sets MPSSupport=true\)/,
    );
  });

  it("takes the values NVIDIA's end-to-end suite installs with, each with NVIDIA's meaning", () => {
    // iupgrade_wait's own (tests/bats/helpers.sh at 95932046) and test_cd_leader_election.bats'.
    const r = template(
      e,
      [
        ...[
          'gpuResourcesEnabledOverride=true',
          'nvidiaDriverRoot=/',
          'logVerbosity=6',
          'controller.replicas=2',
        ],
        ...['controller.leaderElection.enabled=true', 'controller.leaderElection.leaseDuration=15s'],
        ...['controller.leaderElection.renewDeadline=10s', 'controller.leaderElection.retryPeriod=2s'],
        'controller.affinity=null',
      ].flatMap((v) => ['--set', v]),
      'nv',
    );
    assert.equal(r.code, 0, r.err);
    const all = objects(r.out);
    const controller = all.find(
      (d) => d.kind === 'Deployment' && d.metadata.name === 'nv-compute-domain-controller',
    );
    assert.equal(controller?.spec?.replicas, 2);
    const labels = (d: Doc | undefined): unknown =>
      (d?.spec?.template as { metadata?: { labels?: Record<string, string> } } | undefined)?.metadata
        ?.labels?.['dra-driver-nvidia-gpu-component'];
    assert.equal(labels(controller), 'controller');
    assert.equal(
      labels(all.find((d) => d.kind === 'DaemonSet' && d.metadata.name === 'nv-plugin')),
      'kubelet-plugin',
    );
    for (const [kind, name] of [
      ['DaemonSet', 'nv-plugin'],
      ['Deployment', 'nv-compute-domain-controller'],
    ] as const)
      assert.equal(envOf(container(all, kind, name)).get('LOG_VERBOSITY'), '6', name);
    // NVIDIA's chart refuses GPUs without the override; a values file of NVIDIA's that leaves it false is too.
    const guard = template(e, ['--set', 'gpuResourcesEnabledOverride=false']);
    assert.notEqual(guard.code, 0);
    assert.match(guard.err, /gpuResourcesEnabledOverride=false: .*only with it true; allowed: true/);
  });

  it("fails helm install in one line naming each of NVIDIA's values it cannot honour (real API server)", () => {
    for (const [value, allowed] of [
      ['nvidiaDriverRoot=/run/nvidia/driver', 'allowed: /'],
      ['altProcDevices=/var/run/mock-nvml/proc-devices', 'allowed: empty'],
      ['resources.gpus.enabled=false', 'allowed: true'],
      ['controller.leaderElection.leaseDuration=30s', 'allowed: 15s'],
      ['logVerbosity=loud', 'allowed: an integer 0-10'],
    ] as const) {
      const r = helm(e, [
        'install',
        'nvvalues',
        chart,
        '--kubeconfig',
        e.KUBECONFIG,
        '-n',
        'default',
        '--set',
        value,
      ]);
      assert.notEqual(r.code, 0, value);
      const named = r.err.split('\n').filter((l) => l.includes(value));
      assert.equal(named.length, 1, r.err);
      const [line = ''] = named;
      assert.ok(line.endsWith(allowed), line);
      assert.ok(line.length <= 200, line);
    }
    // Refused before anything was applied: no release is left.
    const list = helm(e, ['list', '-a', '-q', '--kubeconfig', e.KUBECONFIG, '-n', 'default']);
    assert.equal(list.code, 0, list.err);
    assert.doesNotMatch(list.out, /nvvalues/);
  });

  it('refuses bad values with the schema, naming the field', () => {
    const r = helm(e, ['template', 'fakegpu', chart, '--set', 'featureGates=Turbo=true']);
    assert.notEqual(r.code, 0);
    assert.match(r.err, /featureGates/);
    const nic = helm(e, ['template', 'fakegpu', chart, '--set', 'nics.numaAttribute=both']);
    assert.notEqual(nic.code, 0);
    assert.match(nic.err, /\/nics\/numaAttribute/);
    const qps = helm(e, ['template', 'fakegpu', chart, '--set', 'fleet.qps=-1']);
    assert.notEqual(qps.code, 0);
    assert.match(qps.err, /\/fleet\/qps/);
    const reset = helm(e, ['template', 'fakegpu', chart, '--set', 'plugin.resetCheckpoint=yes']);
    assert.notEqual(reset.code, 0);
    assert.match(reset.err, /\/plugin\/resetCheckpoint/);
    const policy = helm(e, ['template', 'fakegpu', chart, '--set', 'plugin.admissionPolicy.on=true']);
    assert.notEqual(policy.code, 0);
    assert.match(policy.err, /\/plugin\/admissionPolicy/);
    const pool = helm(e, ['template', 'fakegpu', chart, '--set', 'fleet.pools.a.dynamicMig=true']);
    assert.notEqual(pool.code, 0);
    assert.match(pool.err, /\/fleet\/pools\/a': missing property 'profile'/);
    const dcgmVersion = helm(e, ['template', 'fakegpu', chart, '--set', 'dcgm.exporterVersion=latest']);
    assert.notEqual(dcgmVersion.code, 0);
    assert.match(dcgmVersion.err, /\/dcgm\/exporterVersion/);
    const interval = helm(e, ['template', 'fakegpu', chart, '--set', 'dcgm.serviceMonitor.interval=often']);
    assert.notEqual(interval.code, 0);
    assert.match(interval.err, /\/dcgm\/serviceMonitor\/interval/);
    const cd = helm(e, ['template', 'fakegpu', chart, '--set', 'resources.computeDomains.enabled=yes']);
    assert.notEqual(cd.code, 0);
    assert.match(cd.err, /\/resources\/computeDomains\/enabled/);
    const pull = helm(e, [
      'template',
      'fakegpu',
      chart,
      '--set',
      'computeDomains.daemonImage.pullPolicy=Sometimes',
    ]);
    assert.notEqual(pull.code, 0);
    assert.match(pull.err, /\/computeDomains\/daemonImage\/pullPolicy/);
  });
});
