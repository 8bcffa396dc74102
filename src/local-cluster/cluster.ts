/**
 * The local cluster's public face, for the CLI, the tests and the benchmarks: `up`, `down`, `status`,
 * `restart`, and the names and endpoints callers need.
 */
export { clusterDown, type DownOptions } from './down.js';
export { NIC_CLASS } from './deviceclasses.js';
export { FLEET_DCGM, FLEET_HTTP, FLEET_MALLOC_ENV, FLEET_NODE_FLAGS } from './fleet-process.js';
export { applyObjects, kubectl } from './kubectl.js';
export { kwokNode } from './kwok-nodes.js';
export { PLUGIN_FEATURE_GATES, PLUGIN_HTTP, PROFILE_LABEL } from './plugin-process.js';
export { REPO_ROOT } from '../process/repo.js';
export { clusterRestart, RESTARTABLE, type Restartable } from './restart.js';
export {
  COMPONENT_ORDER,
  DEFAULT_NODE,
  defaultClusterDir,
  KWOK_DEFAULT_PROFILE,
  type ComponentName,
} from './state.js';
export { clusterStatus, type ComponentStatus } from './status.js';
export { clusterUp, exportLines, type ClusterOptions, type Exports } from './up.js';
