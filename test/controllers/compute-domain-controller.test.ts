import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { ComputeDomainController } from '../../src/controllers/compute-domain/controller.js';
import {
  CLIQUE_LABEL,
  cliquesPath,
  COMPUTE_DOMAINS_PATH,
  DOMAIN_LABEL,
  domainPath,
  FINALIZER,
  podsPath,
  type ComputeDomain,
  type ComputeDomainClique,
} from '../../src/model/compute-domain/resource.js';
import { FakeObjects } from '../support/fake-objects.js';

const NS = 'nvidia-dra-driver-gpu';
const log = pino({ level: 'silent' });
const CD_NS = '/apis/resource.nvidia.com/v1beta1/namespaces/team/computedomains';

function setup(numNodes = 0, allocationMode?: 'All') {
  const api = new FakeObjects();
  const cd = api.seed(CD_NS, {
    metadata: { name: 'job' },
    spec: {
      numNodes,
      channel: {
        resourceClaimTemplate: { name: 'job-channel' },
        ...(allocationMode ? { allocationMode } : {}),
      },
    },
  });
  const uid = cd.metadata.uid as string;
  api.seed('/api/v1/nodes', { metadata: { name: 'n1', labels: { [DOMAIN_LABEL]: uid } } });
  const c = new ComputeDomainController({ api, namespace: NS, image: 'daemon:1', log });
  return { api, uid, c };
}

interface Template {
  metadata: { labels: Record<string, string>; finalizers?: string[] };
  spec: { spec: { devices: { requests: unknown[]; config: { opaque: { parameters: unknown } }[] } } };
}
interface Ds {
  metadata: { finalizers?: string[] };
  spec: {
    template: {
      spec: {
        nodeSelector: unknown;
        tolerations: unknown;
        resourceClaims: unknown;
        containers: { startupProbe: unknown; env: { name: string; value?: string }[] }[];
      };
    };
  };
}

function must<T>(v: T | undefined): T {
  assert.ok(v !== undefined, 'the object exists');
  return v;
}

const cdOf = (api: FakeObjects) => api.read<ComputeDomain>(domainPath('team', 'job'));

function daemonPod(api: FakeObjects, uid: string, node: string, ready: boolean, clique: string) {
  api.seed(podsPath(NS), {
    metadata: { name: `d-${node}`, labels: { [DOMAIN_LABEL]: uid, [CLIQUE_LABEL]: clique } },
    spec: { nodeName: node },
    status: {
      phase: 'Running',
      podIP: `10.0.0.${node.slice(1)}`,
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  });
}

describe("NVIDIA's ComputeDomain controller, emulated", () => {
  it('creates both templates and the DaemonSet with NVIDIA names, labels, finalizers and configs', async () => {
    const { api, uid, c } = setup(0, 'All');
    await c.tick();
    assert.deepEqual(cdOf(api)?.metadata.finalizers, [FINALIZER]);
    const wl = must(
      api.read<Template>('/apis/resource.k8s.io/v1/namespaces/team/resourceclaimtemplates/job-channel'),
    );
    assert.deepEqual(wl.metadata.labels, {
      [DOMAIN_LABEL]: uid,
      'resource.nvidia.com/computeDomainTarget': 'Workload',
    });
    assert.deepEqual(wl.spec.spec.devices.requests, [
      { name: 'channel', exactly: { deviceClassName: 'compute-domain-default-channel.nvidia.com' } },
    ]);
    assert.deepEqual(wl.spec.spec.devices.config.at(0)?.opaque, {
      driver: 'compute-domain.nvidia.com',
      parameters: {
        apiVersion: 'resource.nvidia.com/v1beta1',
        kind: 'ComputeDomainChannelConfig',
        domainID: uid,
        allocationMode: 'All',
      },
    });
    const dt = must(
      api.read<Template>(
        `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaimtemplates/computedomain-daemon-${uid}`,
      ),
    );
    assert.equal(dt.metadata.labels['resource.nvidia.com/computeDomainTarget'], 'Daemon');
    assert.deepEqual(dt.spec.spec.devices.requests[0], {
      name: 'daemon',
      exactly: { deviceClassName: 'compute-domain-daemon.nvidia.com' },
    });
    assert.deepEqual(dt.spec.spec.devices.config.at(0)?.opaque.parameters, {
      apiVersion: 'resource.nvidia.com/v1beta1',
      kind: 'ComputeDomainDaemonConfig',
      domainID: uid,
    });
    const ds = must(api.read<Ds>(`/apis/apps/v1/namespaces/${NS}/daemonsets/computedomain-daemon-${uid}`));
    const pod = ds.spec.template.spec;
    assert.deepEqual(pod.nodeSelector, { [DOMAIN_LABEL]: uid });
    assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
    assert.deepEqual(pod.resourceClaims, [
      { name: 'compute-domain-daemon', resourceClaimTemplateName: `computedomain-daemon-${uid}` },
    ]);
    assert.deepEqual(pod.containers.at(0)?.startupProbe, {
      exec: { command: ['compute-domain-daemon', 'check'] },
      periodSeconds: 1,
      failureThreshold: 1200,
    });
    assert.ok(
      pod.containers.at(0)?.env.some((e) => e.name === 'MAX_NODES_PER_IMEX_DOMAIN' && e.value === '18'),
    );
    for (const o of [wl, dt, ds]) assert.deepEqual(o.metadata.finalizers, [FINALIZER]);
    // numNodes 0 and no nodes: Ready at once, as NVIDIA's rule gives.
    assert.deepEqual(cdOf(api)?.status, { status: 'Ready', nodes: [] });
  });

  it('mirrors the cliques into status.nodes, Ready only with numNodes nodes all Ready; prunes entries without a pod', async () => {
    const { api, uid, c } = setup(2);
    await c.tick();
    assert.equal(cdOf(api)?.status?.status, 'NotReady');
    daemonPod(api, uid, 'n1', true, 'cl.1');
    daemonPod(api, uid, 'n2', false, 'cl.1');
    api.seed(cliquesPath(NS), {
      metadata: { name: `${uid}.cl.1`, labels: { [DOMAIN_LABEL]: uid, [CLIQUE_LABEL]: 'cl.1' } },
      daemons: [
        { nodeName: 'n1', ipAddress: '10.0.0.1', cliqueID: 'cl.1', index: 0, status: 'Ready' },
        { nodeName: 'n2', ipAddress: '10.0.0.2', cliqueID: 'cl.1', index: 1, status: 'NotReady' },
        { nodeName: 'gone', ipAddress: '10.0.0.9', cliqueID: 'cl.1', index: 2, status: 'Ready' },
      ],
    });
    await c.tick();
    let st = cdOf(api)?.status;
    assert.equal(st?.status, 'NotReady');
    assert.deepEqual(
      st.nodes?.map((n) => [n.name, n.index, n.status]),
      [
        ['n1', 0, 'Ready'],
        ['n2', 1, 'NotReady'],
      ],
    );
    assert.deepEqual(
      api.read<ComputeDomainClique>(`${cliquesPath(NS)}/${uid}.cl.1`)?.daemons?.map((d) => d.nodeName),
      ['n1', 'n2'],
    );
    const clique = api.read<ComputeDomainClique>(`${cliquesPath(NS)}/${uid}.cl.1`);
    api.objects.forEach((o) => {
      if (o.metadata.name === `${uid}.cl.1`)
        (o as unknown as ComputeDomainClique).daemons = clique?.daemons?.map((d) => ({
          ...d,
          status: 'Ready' as const,
        }));
    });
    await c.tick();
    st = cdOf(api)?.status;
    assert.equal(st?.status, 'Ready');
    // A daemon without a clique (no NVLink fabric) counts through its pod, with index -1.
    daemonPod(api, uid, 'n3', true, '');
    await c.tick();
    assert.deepEqual(
      cdOf(api)?.status?.nodes?.find((n) => n.name === 'n3'),
      { name: 'n3', ipAddress: '10.0.0.3', cliqueID: '', index: -1, status: 'Ready' },
    );
  });

  it("deletes in NVIDIA's order: objects, node labels, their finalizers, then the domain's", async () => {
    const { api, uid, c } = setup();
    await c.tick();
    await api.delete(domainPath('team', 'job'));
    assert.ok(cdOf(api)?.metadata.deletionTimestamp, 'held by its finalizer');
    api.calls.length = 0;
    await c.tick();
    assert.equal(cdOf(api), undefined, 'gone after one pass');
    const writes = api.calls.filter((x) => !x.startsWith('LIST') && !x.startsWith('GET'));
    const first = (p: string) => writes.findIndex((x) => x.startsWith(p));
    assert.ok(first('DELETE') < first('PATCH /api/v1/nodes/n1'), writes.join('\n'));
    assert.ok(first('PATCH /api/v1/nodes/n1') < first('PATCH /apis/resource.k8s.io'), writes.join('\n'));
    assert.equal(writes.at(-1), `PATCH ${domainPath('team', 'job')}`);
    assert.equal(
      api.read<{ metadata: { labels?: Record<string, string> } }>('/api/v1/nodes/n1')?.metadata.labels?.[
        DOMAIN_LABEL
      ],
      undefined,
    );
    for (const k of api.objects.keys()) assert.ok(!k.includes(uid), `${k} left behind`);
  });

  it('sweeps node labels and objects of a domain that vanished without its finalizer', async () => {
    const { api, uid, c } = setup();
    await c.tick();
    for (const [k, o] of api.objects) if (o.metadata.name === 'job') api.objects.delete(k);
    await c.tick();
    for (const k of api.objects.keys()) assert.ok(!k.includes(uid), `${k} left behind`);
    assert.equal(
      api.read<{ metadata: { labels?: Record<string, string> } }>('/api/v1/nodes/n1')?.metadata.labels?.[
        DOMAIN_LABEL
      ],
      undefined,
    );
  });

  it('a failure of one pass leaves nothing half-done that the next pass does not finish', async () => {
    const { api, c } = setup();
    api.failNext = { prefix: 'POST /apis/apps/v1', code: 500 };
    await c.tick();
    assert.equal((await api.list(COMPUTE_DOMAINS_PATH)).length, 1);
    assert.equal((await api.list(`/apis/apps/v1/namespaces/${NS}/daemonsets`)).length, 0);
    await c.tick();
    assert.equal((await api.list(`/apis/apps/v1/namespaces/${NS}/daemonsets`)).length, 1);
  });

  it('goes on past an orphan whose clean-up fails, and past a node it cannot unlabel, to the next pass', async () => {
    const api = new FakeObjects();
    const label = (n: string) =>
      api.read<{ metadata: { labels?: Record<string, string> } }>(`/api/v1/nodes/${n}`)?.metadata.labels?.[
        DOMAIN_LABEL
      ];
    // Nodes labelled for two domains that are gone: the first orphan's first node fails once.
    for (const [n, uid] of [
      ['a1', 'gone-a'],
      ['a2', 'gone-a'],
      ['b1', 'gone-b'],
    ] as const)
      api.seed('/api/v1/nodes', { metadata: { name: n, labels: { [DOMAIN_LABEL]: uid } } });
    const c = new ComputeDomainController({ api, namespace: NS, image: 'daemon:1', log });
    api.failNext = { prefix: 'PATCH /api/v1/nodes/a1', code: 500 };
    await c.tick();
    assert.equal(c.failures, 1);
    assert.deepEqual(['a1', 'a2', 'b1'].map(label), ['gone-a', undefined, undefined]);
    await c.tick();
    assert.deepEqual(['a1', 'a2', 'b1'].map(label), [undefined, undefined, undefined]);
    assert.equal(c.failures, 1);
  });
});
