/**
 * Where the bench runs: its own cluster of KWOK nodes, purged afterwards, or an existing one
 * (`--kubeconfig`), on the nodes `--node-selector` picks, that gets back what it had.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { clusterDown } from '../../src/local-cluster/cluster.js';
import { FakegpuError, show } from '../../src/errors.js';
import { metadataOf, names, type Node, onKwokCluster, Raw, SLICES_PATH, stopFleet } from '../support.js';
import { faithfulClasses } from './claims.js';
import { type Config, log } from './config.js';
import { GENERIC_DRIVER } from './generic.js';
import {
  CLASSES_PATH,
  cleanupNamespace,
  del,
  deleteSlices,
  ensureClasses,
  ensureNamespace,
  NS,
  slicesOf,
} from './objects.js';
import { faithfulPhase, fleetDrivers, genericPhase, type Made, type Results } from './phases.js';

/** Both phases on the cluster of `cfg`: the bench's own, started here, or `--kubeconfig`'s. */
export async function onCluster(cfg: Config): Promise<Results> {
  if (cfg.kubeconfig !== undefined) {
    log(`an existing cluster (${cfg.kubeconfig}), nodes ${show(cfg.selector)}`);
    return run(cfg, cfg.kubeconfig);
  }
  log(`starting the cluster with ${cfg.nodes} KWOK nodes of ${cfg.profile}`);
  await clusterDown({ dir: cfg.dir, purge: true, log });
  return onKwokCluster(
    { dir: cfg.dir, kwokNodes: cfg.nodes, kwokProfile: cfg.profile, keep: cfg.keep, log },
    (kubeconfig) => run(cfg, kubeconfig),
  );
}

function selectedNodes(raw: Raw, selector: string): Promise<Node[]> {
  return metadataOf(raw, '/api/v1/nodes', selector ? `labelSelector=${encodeURIComponent(selector)}` : '');
}

async function run(cfg: Config, kubeconfig: string): Promise<Results> {
  const existing = cfg.kubeconfig !== undefined;
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const raw = await Raw.of(kc, cfg.inFlight + 4);
  const nodes = await selectedNodes(raw, cfg.selector);
  if (nodes.length === 0)
    throw new FakegpuError('bench/sched', `no node matches --node-selector ${show(cfg.selector)}`);
  if ((!existing || cfg.nodesGiven) && nodes.length !== cfg.nodes)
    throw new FakegpuError(
      'bench/sched',
      `expected ${cfg.nodes} nodes matching ${show(cfg.selector)}, found ${nodes.length}${existing ? ' (with --kubeconfig, leave --nodes out to use them all)' : ''}`,
    );
  const first = nodes[0] as Node;
  // Another fleet or plugin serving these nodes would fight this bench's: refused, on the first node.
  // Generic slices the bench itself left (it labels its own) are deleted below.
  for (const d of [...fleetDrivers(cfg.variant), GENERIC_DRIVER]) {
    const all = await names(raw, SLICES_PATH, slicesOf(d, first.name, false));
    const ours = d === GENERIC_DRIVER ? await names(raw, SLICES_PATH, slicesOf(d, first.name, true)) : [];
    if (all.length > ours.length)
      throw new FakegpuError(
        'bench/sched',
        `node ${first.name} already has ${d} slices: another driver serves the selected nodes (or a killed run of this bench left them: kubectl delete resourceslices --field-selector spec.driver=${d}); stop it or choose other nodes with --node-selector`,
      );
  }

  const made: Made = { classes: [], genericClass: false, fleet: null, fleetSlices: false };
  try {
    made.classes.push(...(await ensureClasses(raw, faithfulClasses(cfg.variant))));
    await ensureNamespace(raw);
    await cleanupNamespace(raw, cfg.inFlight);
    await deleteSlices(raw, nodes, GENERIC_DRIVER, true, cfg.inFlight);
    const target = { cfg, kubeconfig, kc, raw, nodes };
    const faithful = await faithfulPhase(target, made);
    const generic = await genericPhase(target, made);
    return { nodes: nodes.length, faithful, generic };
  } finally {
    if (made.fleet) await stopFleet(made.fleet);
    // The bench's own cluster is purged (or kept, to be looked at); an existing one gets back what it had.
    if (existing) await cleanup(cfg, raw, nodes, made);
  }
}

/** Everything the bench made on an existing cluster removed; a step that fails is logged, not thrown. */
async function cleanup(cfg: Config, raw: Raw, nodes: Node[], made: Made): Promise<void> {
  const step = async (what: string, fn: () => Promise<void>): Promise<void> => {
    try {
      await fn();
    } catch (e) {
      log(`cleanup: ${what} failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  log('cleanup: removing what the bench made');
  await step('the namespace', async () => {
    await cleanupNamespace(raw, cfg.inFlight);
    await del(raw, `/api/v1/namespaces/${NS}`);
  });
  await step('the generic slices', () => deleteSlices(raw, nodes, GENERIC_DRIVER, true, cfg.inFlight));
  if (made.fleetSlices)
    for (const d of fleetDrivers(cfg.variant))
      await step(`the ${d} slices`, () => deleteSlices(raw, nodes, d, false, cfg.inFlight));
  for (const c of [...(made.genericClass ? [GENERIC_DRIVER] : []), ...made.classes])
    await step(`DeviceClass ${c}`, () => del(raw, `${CLASSES_PATH}/${c}`));
}
