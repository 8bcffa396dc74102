import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { AuditLog, auditedWrite } from './audit.js';

/** Audit events as kube-apiserver writes them with the chaos suite's policy (one JSON object a line). */
const event = (o: Record<string, unknown>): string =>
  JSON.stringify({
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    stage: 'ResponseComplete',
    userAgent: 'fakegpu/pid-4242',
    requestReceivedTimestamp: '2026-12-03T15:00:00.123456Z',
    responseStatus: { metadata: {}, code: 201 },
    ...o,
  });

describe("the chaos suite's reading of the API server's audit log", () => {
  it('takes a create, update or delete the server applied, with its node and sending process', () => {
    assert.deepEqual(
      auditedWrite(event({ verb: 'create', requestObject: { spec: { nodeName: 'kwok-gpu-1' } } })),
      { at: Date.parse('2026-12-03T15:00:00.123Z'), pid: 4242, node: 'kwok-gpu-1', verb: 'create' },
    );
    // A delete's request is DeleteOptions: the node is the removed slice's, in the response.
    assert.equal(
      auditedWrite(
        event({
          verb: 'delete',
          responseStatus: { code: 200 },
          requestObject: { kind: 'DeleteOptions' },
          responseObject: { spec: { nodeName: 'kwok-gpu-2' } },
        }),
      )?.node,
      'kwok-gpu-2',
    );
    assert.equal(
      auditedWrite(
        event({ verb: 'update', userAgent: 'kubectl/v1.37.2', requestObject: { spec: { nodeName: 'n' } } }),
      )?.pid,
      null,
    );
  });

  it('leaves out what was not applied, and what is not an event', () => {
    const spec = { requestObject: { spec: { nodeName: 'kwok-gpu-1' } } };
    assert.equal(auditedWrite(event({ verb: 'update', responseStatus: { code: 409 }, ...spec })), null);
    assert.equal(auditedWrite(event({ verb: 'create', stage: 'RequestReceived', ...spec })), null);
    assert.equal(auditedWrite(event({ verb: 'create' })), null);
    assert.equal(
      auditedWrite(
        event({ verb: 'create', requestURI: '/apis/resource.k8s.io/v1/resourceslices?dryRun=All', ...spec }),
      ),
      null,
    );
    assert.equal(auditedWrite('{"kind":'), null);
  });

  it('reads only what was appended since, a line split between reads kept whole', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fakegpu-audit-')), 'audit.log');
    const log = new AuditLog(path);
    assert.deepEqual(log.next(), [], 'no file yet');
    const line = (n: string): string => event({ verb: 'create', requestObject: { spec: { nodeName: n } } });
    appendFileSync(path, `${line('a')}\n${line('b').slice(0, 40)}`);
    assert.deepEqual(
      log.next().map((w) => w.node),
      ['a'],
    );
    appendFileSync(path, `${line('b').slice(40)}\n${line('c')}\n`);
    assert.deepEqual(
      log.next().map((w) => w.node),
      ['b', 'c'],
    );
    assert.deepEqual(log.next(), []);
  });
});
