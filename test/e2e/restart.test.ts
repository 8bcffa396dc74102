import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { clusterRestart, type Exports } from '../../src/local-cluster/cluster.js';
import { layout } from '../../src/local-cluster/config.js';
import { eventually, mustKubectl, nodeReady } from '../support/cluster.js';
import {
  apply,
  E2E_CLUSTER_DIR,
  E2E_NODE,
  cleanup,
  e2eCluster,
  podClaim,
  podManifest,
  running,
  seen,
  seesNow,
} from '../support/e2e.js';

/** Restarts of the plugin and of the kubelet while pods with GPUs run: nothing may be lost. */
describe('restarts with running pods', () => {
  let e: Exports;
  const log = (l: string): void => {
    process.stderr.write(`fakegpu: ${l}\n`);
  };
  before(async () => {
    e = await e2eCluster();
    apply(e, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 'restart-gpu', namespace: 'default' },
      spec: {
        spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.nvidia.com' } }] } },
      },
    });
  });
  after(() => {
    cleanup(e);
  });

  const state = (pod: string): { uid: string; spec: string; restarts: string; containerId: string } => {
    const uid = mustKubectl(e, [
      'get',
      'resourceclaim',
      podClaim(e, pod, 'gpu'),
      '-o',
      'jsonpath={.metadata.uid}',
    ]);
    return {
      uid,
      spec: join(layout(E2E_CLUSTER_DIR).cdiDir, `k8s.gpu.nvidia.com-claim_${uid}.yaml`),
      restarts: mustKubectl(e, [
        'get',
        'pod',
        pod,
        '-o',
        'jsonpath={.status.containerStatuses[0].restartCount}',
      ]),
      containerId: mustKubectl(e, [
        'get',
        'pod',
        pod,
        '-o',
        'jsonpath={.status.containerStatuses[0].containerID}',
      ]),
    };
  };

  for (const component of ['fakegpu-plugin', 'kubelet'] as const) {
    it(`${component} restart: the running pod is untouched, its claim stays prepared, new pods still work`, async () => {
      const pod = `before-${component}`;
      apply(
        e,
        podManifest(e, {
          name: pod,
          claims: [{ name: 'gpu', template: 'restart-gpu' }],
          containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
        }),
      );
      await running(e, pod);
      const was = state(pod);
      const saw = await seen(e, pod, 'main');
      await clusterRestart(E2E_CLUSTER_DIR, component, log);
      await eventually('the node Ready again', () => (nodeReady(e, E2E_NODE) ? true : undefined));
      await eventually('slices published again', () =>
        mustKubectl(e, [
          'get',
          'resourceslices',
          `--field-selector=spec.nodeName=${E2E_NODE}`,
          '-o',
          'name',
        ]).trim()
          ? true
          : undefined,
      );
      const now = state(pod);
      assert.deepEqual(now, was, 'same claim, same CDI spec, no container restart');
      assert.ok(existsSync(now.spec), 'the CDI spec is still there');
      assert.deepEqual(await seen(e, pod, 'main'), saw);
      // The running container, asked now: its views and device nodes survived the restart.
      assert.deepEqual(seesNow(e, pod, 'main'), { listed: saw.listed, devNodes: saw.devNodes });
      const after = `after-${component}`;
      apply(
        e,
        podManifest(e, {
          name: after,
          claims: [{ name: 'gpu', template: 'restart-gpu' }],
          containers: [{ name: 'main', claims: [{ name: 'gpu' }] }],
        }),
      );
      await running(e, after);
      assert.equal((await seen(e, after, 'main')).listed.length, 1);
      mustKubectl(e, ['delete', 'pod', pod, after, '--wait=true', '--timeout=60s']);
      await eventually('the CDI spec of the first pod to go', () =>
        existsSync(now.spec) ? undefined : true,
      );
    });
  }
});

describe('a node label picks the machine', () => {
  it('fakegpu.dev/profile switches the node to another preset at the next plugin start, and back', async () => {
    const e = await e2eCluster();
    const log = (l: string): void => {
      process.stderr.write(`fakegpu: ${l}\n`);
    };
    const products = (): string[] => {
      const list = JSON.parse(
        mustKubectl(e, [
          'get',
          'resourceslices',
          `--field-selector=spec.nodeName=${E2E_NODE},spec.driver=gpu.nvidia.com`,
          '-o',
          'json',
        ]),
      ) as {
        items: { spec: { devices?: { attributes?: { productName?: { string: string } } }[] } }[];
      };
      return [
        ...new Set(
          list.items.flatMap((s) =>
            (s.spec.devices ?? []).map((d) => d.attributes?.productName?.string ?? ''),
          ),
        ),
      ];
    };
    try {
      mustKubectl(e, ['label', 'node', E2E_NODE, 'fakegpu.dev/profile=aws-p4d.24xlarge', '--overwrite']);
      await clusterRestart(E2E_CLUSTER_DIR, 'fakegpu-plugin', log);
      assert.deepEqual(
        await eventually('A100 slices', () =>
          products().join() === 'NVIDIA A100-SXM4-40GB' ? products() : undefined,
        ),
        ['NVIDIA A100-SXM4-40GB'],
      );
    } finally {
      mustKubectl(e, ['label', 'node', E2E_NODE, 'fakegpu.dev/profile-']);
      await clusterRestart(E2E_CLUSTER_DIR, 'fakegpu-plugin', log);
    }
    assert.deepEqual(
      await eventually('H100 slices again', () =>
        products().join() === 'NVIDIA H100 80GB HBM3' ? products() : undefined,
      ),
      ['NVIDIA H100 80GB HBM3'],
    );
  });
});
