import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KUEUE_WEBHOOK, kueueWebhooks } from '../../src/local-cluster/kueue-process.js';
import { COMPONENTS, kubeProxyComponent, kubernetesComponent } from '../../src/local-cluster/build.js';
import { defaultRelease } from '../../src/local-cluster/releases.js';
import { binaryOf, COMPONENT_ORDER, componentsOf, type State } from '../../src/local-cluster/state.js';

/** `cluster up --with karpenter,kueue`: what runs, and how Kueue's webhooks reach a host process. */

const state = (o: Partial<State>): State => ({
  nodeName: 'n',
  bin: '/b',
  cniBin: '/c',
  profile: null,
  dynamicMig: false,
  ...o,
});

describe('cluster up --with', () => {
  it('knows every upstream component by the binary it is built as, so down stops it (karpenter-kwok)', () => {
    const built = new Set(
      [...COMPONENTS, kubernetesComponent(defaultRelease()), kubeProxyComponent()].flatMap((c) =>
        Object.values(c.binaries),
      ),
    );
    for (const name of COMPONENT_ORDER.filter((n) => !n.startsWith('fakegpu-')))
      assert.ok(built.has(binaryOf(name)), `${name} runs ${binaryOf(name)}, a binary the build makes`);
  });

  it("Karpenter brings KWOK and the fleet without KWOK nodes of its own: its nodes are KWOK's", () => {
    const c = componentsOf(state({ kwokNodes: 0, with: ['karpenter'] }));
    for (const n of ['kwok', 'fakegpu-fleet', 'karpenter'] as const) assert.ok(c.includes(n), n);
    assert.ok(!c.includes('kueue'));
    assert.deepEqual(
      componentsOf(state({ kwokNodes: 0 })).filter((n) => ['kwok', 'fakegpu-fleet', 'karpenter'].includes(n)),
      [],
    );
  });

  it('Kueue alone runs Kueue, and KWOK only for KWOK nodes', () => {
    const c = componentsOf(state({ kwokNodes: 0, with: ['kueue'] }));
    assert.ok(c.includes('kueue') && !c.includes('kwok') && !c.includes('karpenter'));
  });
});

const MANIFESTS = `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- clientConfig:
    service: { name: webhook-service, namespace: system, path: /mutate-batch-v1-job }
  name: mjob.kb.io
  rules: [{ apiGroups: [batch], apiVersions: [v1], operations: [CREATE], resources: [jobs] }]
- clientConfig:
    service: { name: webhook-service, namespace: system, path: /mutate--v1-pod }
  name: mpod.kb.io
  rules: [{ apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods] }]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- clientConfig:
    service: { name: webhook-service, namespace: system, path: /validate-kueue-x-k8s-io-v1beta2-clusterqueue }
  name: vclusterqueue.kb.io
  rules: [{ apiGroups: [kueue.x-k8s.io], apiVersions: [v1beta2], operations: [CREATE], resources: [clusterqueues] }]
- clientConfig:
    service: { name: webhook-service, namespace: system, path: /validate-apps-v1-deployment }
  name: vdeployment.kb.io
  rules: [{ apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments] }]
`;

describe("Kueue's webhooks for a host process", () => {
  const hooks = kueueWebhooks(MANIFESTS, 'Q0E=') as {
    kind: string;
    metadata: { name: string };
    webhooks: { name: string; clientConfig: { url?: string; caBundle?: string; service?: unknown } }[];
  }[];

  it("keeps Kueue's own resources and batch Jobs; pods and Deployments would fail closed while Kueue is down", () => {
    assert.deepEqual(
      hooks.map((h) => [h.kind, h.metadata.name, h.webhooks.map((w) => w.name)]),
      [
        ['MutatingWebhookConfiguration', 'kueue-mutating-webhook-configuration', ['mjob.kb.io']],
        ['ValidatingWebhookConfiguration', 'kueue-validating-webhook-configuration', ['vclusterqueue.kb.io']],
      ],
    );
  });

  it('points each at the host by URL, trusting the cluster CA', () => {
    assert.deepEqual(hooks[0]?.webhooks[0]?.clientConfig, {
      url: `https://127.0.0.1:${KUEUE_WEBHOOK}/mutate-batch-v1-job`,
      caBundle: 'Q0E=',
    });
  });
});
