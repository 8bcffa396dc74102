import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The node plugin's metrics, named after NVIDIA's where it has the same one. */
export function pluginMetrics(reg: Registry) {
  collectDefaultMetrics({ register: reg, prefix: 'fakegpu_' });
  return {
    requests: new Counter({
      name: 'fakegpu_dra_requests_total',
      help: 'DRA gRPC requests by method and result',
      labelNames: ['method', 'result'],
      registers: [reg],
    }),
    latency: new Histogram({
      name: 'fakegpu_dra_request_duration_seconds',
      help: 'DRA gRPC request latency by method',
      labelNames: ['method'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [reg],
    }),
    published: new Gauge({
      name: 'fakegpu_published_devices',
      help: 'devices in the ResourceSlices this node publishes, by driver',
      labelNames: ['driver'],
      registers: [reg],
    }),
    prepared: new Gauge({
      name: 'fakegpu_prepared_claims',
      help: 'claims currently prepared on this node',
      registers: [reg],
    }),
    swept: new Counter({
      name: 'fakegpu_swept_total',
      help: 'what the start-up sweep removed because no checkpointed claim held it, by driver and kind (cdi_spec, view, mig_instance), claims rolled back (rolled_back), and claims the API server no longer has, unprepared (stale_claim)',
      labelNames: ['driver', 'kind'],
      registers: [reg],
    }),
  };
}
export type PluginMetrics = ReturnType<typeof pluginMetrics>;
