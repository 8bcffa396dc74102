import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  DRA_V1,
  DRA_V1BETA1,
  REGISTRATION,
  startServers,
  type ClaimRef,
  type RunningServers,
} from '../../src/node/kubelet/grpc.js';
import { dial, invoke } from '../../src/node/kubelet/client.js';

/**
 * Our gRPC servers against the field tables: a client built from the same .proto files speaks to them
 * over the real Unix sockets, as the kubelet does; malformed bytes are refused, not crashed on.
 */
describe('kubelet-facing gRPC servers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fakegpu-grpc-'));
  let servers: RunningServers;
  const seen: ClaimRef[][] = [];
  const registrations: [boolean, string][] = [];
  before(async () => {
    servers = await startServers(
      {
        driverName: 'gpu.nvidia.com',
        pluginsDir: join(dir, 'plugins'),
        registrarDir: join(dir, 'registry'),
        onRegistration: (ok, err) => registrations.push([ok, err]),
      },
      {
        prepare: (claims) => {
          seen.push(claims);
          return Promise.resolve({
            claims: Object.fromEntries(
              claims.map((c) => [
                c.uid,
                c.name === 'bad'
                  ? { devices: [], error: 'boom' }
                  : {
                      devices: [
                        {
                          requestNames: ['gpus'],
                          poolName: 'n1',
                          deviceName: 'gpu-0',
                          cdiDeviceIds: [`k8s.gpu.nvidia.com/claim=${c.uid}-gpu-0`],
                        },
                      ],
                      error: '',
                    },
              ]),
            ),
          });
        },
        unprepare: (claims) =>
          Promise.resolve({ claims: Object.fromEntries(claims.map((c) => [c.uid, { error: '' }])) }),
      },
    );
  });
  after(async () => {
    await servers.stop();
  });

  it('answers GetInfo as a DRA plugin advertising v1 then v1beta1, and takes the registration status', async () => {
    const reg = dial('pluginregistration.proto', REGISTRATION, servers.registrationSocket);
    assert.deepEqual(await invoke(reg, 'GetInfo', {}), {
      type: 'DRAPlugin',
      name: 'gpu.nvidia.com',
      endpoint: servers.draSocket,
      supportedVersions: ['v1.DRAPlugin', 'v1beta1.DRAPlugin'],
    });
    assert.deepEqual(
      await invoke(reg, 'NotifyRegistrationStatus', { pluginRegistered: false, error: 'nope' }),
      {},
    );
    assert.deepEqual(registrations, [[false, 'nope']]);
    reg.close();
  });

  for (const [version, file, path] of [
    ['v1', 'dra-v1.proto', DRA_V1],
    ['v1beta1', 'dra-v1beta1.proto', DRA_V1BETA1],
  ] as const) {
    it(`serves NodePrepareResources and NodeUnprepareResources (${version})`, async () => {
      const dra = dial(file, path, servers.draSocket);
      const res = (await invoke(dra, 'NodePrepareResources', {
        claims: [
          { namespace: 'ns', uid: 'u1', name: 'good' },
          { namespace: 'ns', uid: 'u2', name: 'bad' },
        ],
      })) as { claims: Record<string, { devices: unknown[]; error: string }> };
      // share_id (v1 only) is a proto3 optional the plugin leaves unset, so it is absent on the wire.
      assert.deepEqual(res.claims['u1']?.devices, [
        {
          requestNames: ['gpus'],
          poolName: 'n1',
          deviceName: 'gpu-0',
          cdiDeviceIds: ['k8s.gpu.nvidia.com/claim=u1-gpu-0'],
        },
      ]);
      assert.equal(res.claims['u2']?.error, 'boom');
      assert.deepEqual(seen.at(-1), [
        { namespace: 'ns', uid: 'u1', name: 'good' },
        { namespace: 'ns', uid: 'u2', name: 'bad' },
      ]);
      assert.deepEqual(
        await invoke(dra, 'NodeUnprepareResources', {
          claims: [{ namespace: 'ns', uid: 'u1', name: 'good' }],
        }),
        { claims: { u1: { error: '' } } },
      );
      dra.close();
    });
  }

  it('refuses malformed bytes with a gRPC error and keeps serving', async () => {
    const raw = new grpc.Client(`unix://${servers.draSocket}`, grpc.credentials.createInsecure());
    const err = await new Promise<grpc.ServiceError | null>((resolve) => {
      raw.makeUnaryRequest(
        '/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f]),
        (e) => {
          resolve(e);
        },
      );
    });
    assert.ok(err, 'an error');
    assert.equal(err.code, grpc.status.INTERNAL);
    raw.close();
    const dra = dial('dra-v1.proto', DRA_V1, servers.draSocket);
    assert.deepEqual(await invoke(dra, 'NodeUnprepareResources', { claims: [] }), { claims: {} });
    dra.close();
  });
});
