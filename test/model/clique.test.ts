import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodeClique } from '../../src/model/device/clique.js';
import { buildMachine } from '../../src/model/hardware/build.js';
import { MockNvml } from '../../src/model/nvml/mock.js';
import { MemoryMigStateStore } from '../../src/model/nvml/state.js';
import { NVML_GPU_FABRIC_STATE, NVML_RETURN, NvmlError } from '../../src/model/nvml/types.js';
import { type ResolvedProfile } from '../../src/model/profile/load.js';
import { resolveProfile } from '../../src/process/profile-file.js';

/** NVLink fabric info from the mock NVML, and the clique NVIDIA's compute-domain plugin derives from it. */
function nvml(profile: ResolvedProfile | string, node: string, rack?: string): MockNvml {
  const p = typeof profile === 'string' ? resolveProfile(profile) : profile;
  return new MockNvml(
    buildMachine(p, { nodeName: node, dynamicMig: false, rack }),
    new MemoryMigStateStore(),
  );
}

const CLIQUE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.\d+$/;

describe('NVLink fabric and cliques', () => {
  it('GB200 and GB300 GPUs report a completed fabric registration; the node clique is <clusterUUID>.<cliqueId>', () => {
    for (const preset of ['oci-bm.gpu.gb200.4', 'azure-nd-gb300-v6']) {
      const n = nvml(preset, 'node-a');
      const info = n.deviceGetHandleByIndex(0).getGpuFabricInfo();
      assert.equal(info.state, NVML_GPU_FABRIC_STATE.COMPLETED);
      assert.equal(info.status, 0);
      assert.match(nodeClique(n) ?? '', CLIQUE);
      assert.equal(nodeClique(n), `${info.clusterUuid}.${info.cliqueId}`);
    }
  });

  it('nodes of one rack share the clique; another rack has another', () => {
    const a = nodeClique(nvml('oci-bm.gpu.gb200.4', 'node-a', 'rack-1'));
    const b = nodeClique(nvml('oci-bm.gpu.gb200.4', 'node-b', 'rack-1'));
    const c = nodeClique(nvml('oci-bm.gpu.gb200.4', 'node-c', 'rack-2'));
    assert.equal(a, b);
    assert.notEqual(a, c);
    assert.notEqual(
      nodeClique(nvml('oci-bm.gpu.gb200.4', 'node-a')),
      nodeClique(nvml('oci-bm.gpu.gb200.4', 'node-b')),
      'by default each node is its own rack',
    );
  });

  it('GPUs without NVLink fabric answer NOT_SUPPORTED and the node has no clique', () => {
    const n = nvml('dgx-h100', 'node-a');
    assert.throws(
      () => n.deviceGetHandleByIndex(0).getGpuFabricInfo(),
      (e: unknown) => e instanceof NvmlError && e.code === NVML_RETURN.ERROR_NOT_SUPPORTED,
    );
    assert.equal(nodeClique(n), null);
  });

  it("a profile fixes the cluster UUID and clique, as a captured node's would; an all-zero UUID means none", () => {
    const base = resolveProfile('oci-bm.gpu.gb200.4');
    const uuid = 'a2221497-dbce-4964-8826-684c3694fd45';
    const fixed = { ...base, spec: { ...base.spec, fabric: { clusterUuid: uuid, cliqueId: 2478 } } };
    assert.equal(nodeClique(nvml(fixed, 'node-a')), `${uuid}.2478`);
    const zero = {
      ...base,
      spec: { ...base.spec, fabric: { clusterUuid: '00000000-0000-0000-0000-000000000000' } },
    };
    assert.equal(nodeClique(nvml(zero, 'node-a')), null);
  });
});
