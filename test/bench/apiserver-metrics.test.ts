import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  apiserverPhase,
  parseExposition,
  quantileOfDelta,
  showPhase,
} from '../../bench/apiserver-metrics.js';

/** The API server's metrics around a bench phase, as bench/fleet reads them. */

const scrape = (o: {
  posts: [number, number, number];
  leasePuts: number;
  cpu: number;
  rejected: number;
}): string =>
  [
    '# HELP apiserver_request_duration_seconds x',
    '# TYPE apiserver_request_duration_seconds histogram',
    `apiserver_request_duration_seconds_bucket{component="apiserver",group="resource.k8s.io",resource="resourceslices",verb="POST",le="0.1"} ${o.posts[0]}`,
    `apiserver_request_duration_seconds_bucket{component="apiserver",group="resource.k8s.io",resource="resourceslices",verb="POST",le="0.5"} ${o.posts[1]}`,
    `apiserver_request_duration_seconds_bucket{component="apiserver",group="resource.k8s.io",resource="resourceslices",verb="POST",le="+Inf"} ${o.posts[2]}`,
    `apiserver_request_duration_seconds_bucket{component="apiserver",resource="nodes",verb="PATCH",le="+Inf"} 7`,
    `apiserver_request_total{code="201",resource="resourceslices",verb="POST"} ${o.posts[2]}`,
    `apiserver_request_total{code="200",resource="leases",verb="PUT"} ${o.leasePuts}`,
    `apiserver_request_total{code="200",resource="leases",verb="GET"} 3`,
    `apiserver_flowcontrol_rejected_requests_total{flow_schema="global-default",priority_level="global-default",reason="time-out"} ${o.rejected}`,
    `process_cpu_seconds_total ${o.cpu}`,
    `go_cpu_classes_gc_mark_assist_cpu_seconds_total ${o.cpu / 10}`,
    `etcd_request_duration_seconds_bucket{group="resource.k8s.io",operation="create",resource="resourceslices",le="0.01"} ${o.posts[0]}`,
    `etcd_request_duration_seconds_bucket{group="resource.k8s.io",operation="create",resource="resourceslices",le="+Inf"} ${o.posts[2]}`,
    `etcd_request_duration_seconds_bucket{group="",operation="create",resource="events",le="+Inf"} ${o.posts[2] * 9}`,
    'process_resident_memory_bytes 1.073741824e+09',
    'go_gc_gomemlimit_bytes 2.147483648e+09',
  ].join('\n');

describe("the API server's metrics of a bench phase", () => {
  it('parses labels with escaped quotes and values in exponent form', () => {
    const e = parseExposition('a{x="q\\"r",y="s"} 1.5e+03\nb 2\n# c 3\n');
    assert.deepEqual(e.get('a'), [{ labels: { x: 'q\\"r', y: 's' }, value: 1500 }]);
    assert.deepEqual(e.get('b'), [{ labels: {}, value: 2 }]);
    assert.equal(e.has('#'), false);
  });

  it("interpolates a quantile within its bucket, as PromQL's histogram_quantile does", () => {
    const b = new Map([
      ['0.1', 50],
      ['0.5', 90],
      ['+Inf', 100],
    ]);
    assert.equal(quantileOfDelta(b, 0.5), 0.1);
    assert.ok(Math.abs(quantileOfDelta(b, 0.7) - 0.3) < 1e-9);
    assert.equal(quantileOfDelta(b, 0.99), 0.5, 'in the +Inf bucket: its lower bound');
    assert.ok(Number.isNaN(quantileOfDelta(new Map([['+Inf', 0]]), 0.5)));
  });

  it('counts only what happened between the scrapes: latencies, lease writes, CPU, rejections', () => {
    const before = parseExposition(scrape({ posts: [10, 10, 10], leasePuts: 1000, cpu: 100, rejected: 2 }));
    const after = parseExposition(scrape({ posts: [60, 100, 110], leasePuts: 5000, cpu: 150, rejected: 2 }));
    const p = apiserverPhase(before, after, 100);
    assert.equal(p.gcCoresByKind.assist, 0.05);
    // 50 of 100 slice creates answered by etcd within 10 ms: the median is that bucket's bound.
    assert.equal(p.etcdCreateP50S, 0.01);
    assert.deepEqual(
      p.slices.map((v) => [v.verb, v.requests]),
      [['POST', 100]],
    );
    // 50 of the 100 below 0.1 s: the median is 0.1 s; the 99th is in the +Inf bucket, above 0.5 s.
    assert.equal(p.slices[0]?.p50S, 0.1);
    assert.equal(p.leasesPerS['PUT'], 40);
    assert.equal(p.leasesPerS['GET'], undefined, 'no GET in the phase');
    assert.equal(p.cpuCores, 0.5);
    assert.deepEqual(p.apfRejected, {}, 'the two rejections were before the phase');
    assert.equal(p.rssMiB, 1024);
    assert.equal(p.memoryLimitMiB, 2048);
    assert.deepEqual(
      p.writesPerS.map((w) => w.what),
      ['leases PUT', 'resourceslices POST'],
    );
    assert.match(showPhase(p).join('\n'), /node leases PUT 40\.0\/s/);
  });
});
