import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { DaemonStandIn } from '../../src/node/imex-daemon/daemon.js';
import {
  CLIQUE_LABEL,
  cliquesPath,
  DOMAIN_LABEL,
  podsPath,
  type ComputeDomainClique,
} from '../../src/model/compute-domain/resource.js';
import { enterClique } from '../../src/controllers/compute-domain/status.js';
import { FakeObjects } from '../support/fake-objects.js';

const NS = 'nvidia-dra-driver-gpu';
const log = pino({ level: 'silent' });
const CL = '5e7f1c1a-0000-4000-8000-000000000001.388';

function pod(api: FakeObjects, node: string, o: { ready?: boolean; phase?: string; uid?: string } = {}) {
  return api.seed(podsPath(NS), {
    metadata: { name: `daemon-${node}`, labels: { [DOMAIN_LABEL]: o.uid ?? 'cd-1' } },
    spec: { nodeName: node },
    status: {
      phase: o.phase ?? 'Running',
      podIP: `10.1.0.${node.replace(/\D/g, '')}`,
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
    },
  });
}

const cliqueOf = (api: FakeObjects, uid = 'cd-1') =>
  api.read<ComputeDomainClique>(`${cliquesPath(NS)}/${uid}.${CL}`);

describe("the IMEX daemon's clique entries, written for it", () => {
  it('enters each running daemon with its pod IP, the lowest free index and its readiness; labels the pod', async () => {
    const api = new FakeObjects();
    pod(api, 'n1');
    pod(api, 'n2', { ready: false });
    pod(api, 'n3', { phase: 'Pending' });
    const d = new DaemonStandIn({
      api,
      namespace: NS,
      cliqueOf: (n) => (n === 'other' ? undefined : CL),
      log,
    });
    await d.tick();
    const c = cliqueOf(api);
    assert.deepEqual(c?.daemons, [
      { nodeName: 'n1', ipAddress: '10.1.0.1', cliqueID: CL, index: 0, status: 'Ready' },
      { nodeName: 'n2', ipAddress: '10.1.0.2', cliqueID: CL, index: 1, status: 'NotReady' },
    ]);
    assert.deepEqual(c.metadata.labels, { [DOMAIN_LABEL]: 'cd-1', [CLIQUE_LABEL]: CL });
    assert.deepEqual(c.metadata.ownerReferences?.map((r) => [r.kind, r.name]).sort(), [
      ['Pod', 'daemon-n1'],
      ['Pod', 'daemon-n2'],
    ]);
    assert.equal(
      api.read<{ metadata: { labels: Record<string, string> } }>(`${podsPath(NS)}/daemon-n1`)?.metadata
        .labels[CLIQUE_LABEL],
      CL,
    );
    // A pass with nothing new writes nothing.
    api.calls.length = 0;
    await d.tick();
    assert.deepEqual(
      api.calls.filter((x) => !x.startsWith('LIST')),
      [],
    );
  });

  it('keeps indexes as daemons come and go, reuses the lowest free one, deletes the clique when the last leaves', async () => {
    const api = new FakeObjects();
    pod(api, 'n1');
    pod(api, 'n2');
    const d = new DaemonStandIn({ api, namespace: NS, cliqueOf: () => CL, log });
    await d.tick();
    api.objects.forEach((o, k) => {
      if (o.metadata.name === 'daemon-n1') api.objects.delete(k);
    });
    pod(api, 'n3');
    await d.tick();
    assert.deepEqual(
      cliqueOf(api)?.daemons?.map((x) => [x.nodeName, x.index]),
      [
        ['n3', 0],
        ['n2', 1],
      ],
    );
    api.objects.forEach((o, k) => {
      if (o.metadata.name.startsWith('daemon-')) api.objects.delete(k);
    });
    await d.tick();
    assert.equal(cliqueOf(api), undefined);
  });

  it('a full domain (eighteen daemons) takes no nineteenth; a freed index goes to the next', () => {
    const current: ComputeDomainClique = {
      apiVersion: 'resource.nvidia.com/v1beta1',
      kind: 'ComputeDomainClique',
      metadata: {
        name: `cd-1.${CL}`,
        resourceVersion: '7',
        labels: { [DOMAIN_LABEL]: 'cd-1', [CLIQUE_LABEL]: CL },
      },
      daemons: Array.from({ length: 18 }, (_, i) => ({
        nodeName: `o${i}`,
        ipAddress: '',
        cliqueID: CL,
        index: i,
        status: 'Ready' as const,
      })),
    };
    const p = {
      metadata: { name: 'x', uid: 'u-x' },
      spec: { nodeName: 'mine' },
      status: { phase: 'Running' },
    };
    assert.equal(
      enterClique(
        'cd-1',
        CL,
        NS,
        current,
        [{ nodeName: 'mine', cliqueID: CL, pod: p }],
        new Set(),
        new Set(['u-x']),
      ),
      null,
    );
    // o3's daemon left (its agent says so): its index is the lowest free one for the next.
    const next = enterClique(
      'cd-1',
      CL,
      NS,
      current,
      [{ nodeName: 'mine', cliqueID: CL, pod: p }],
      new Set(['o3']),
      new Set(['u-x']),
    );
    assert.ok(next && !('delete' in next));
    assert.deepEqual(next.daemons?.find((x) => x.nodeName === 'mine')?.index, 3);
    assert.equal(next.daemons.length, 18);
  });

  it('a write that lost a race is retried by the next pass, beside the winner', async () => {
    const api = new FakeObjects();
    pod(api, 'n1');
    const d = new DaemonStandIn({ api, namespace: NS, cliqueOf: (n) => (n === 'n1' ? CL : undefined), log });
    api.failNext = { prefix: 'POST /apis/resource.nvidia.com', code: 409 };
    await d.tick();
    assert.equal(cliqueOf(api), undefined);
    await d.tick();
    assert.equal(cliqueOf(api)?.daemons?.length, 1);
  });
});
