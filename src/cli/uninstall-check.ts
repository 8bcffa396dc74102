import { Command, Option } from 'commander';
import { COMPUTE_DOMAIN_DRIVER } from '../model/compute-domain/slice.js';
import { FakegpuError } from '../errors.js';
import type { Meta } from '../kube/api.js';
import { CLAIMS_PATH, type ListedClaim } from '../kube/types/claim.js';
import { DRANET } from '../model/nic/attributes.js';
import { fleetDrivers } from '../fleet/scope.js';
import { checkDriverName } from './commands.js';
import {
  driverNameOption,
  envOption,
  kubeconfigOption,
  loadKubeconfig,
  noComputeDomainsOption,
  sourceOf,
} from './options.js';
import { examples } from './flags.js';

interface Flags {
  driverName: string;
  nicDriverName: string;
  nics: boolean;
  computeDomains: boolean;
  kubeconfig?: string;
}

const FIELD = 'uninstall-check';

/**
 * `fakegpu uninstall-check`, the chart's pre-delete Job: refuses (exit 1, one line) while a pod holds a
 * device the node plugin prepared on a node with a kubelet, which could not unprepare it once the plugin
 * is gone; prints one line and exits 0 otherwise.
 */
export function uninstallCheckCommand(write: (s: string) => void): Command {
  const c = new Command('uninstall-check')
    .description(
      "refuse to uninstall while pods hold devices the node plugin prepared (the chart's pre-delete hook): without the plugin the kubelet cannot unprepare them",
    )
    .addOption(driverNameOption())
    .addOption(envOption('--nic-driver-name <name>', 'driver name of the NICs', 'NIC_DRIVER_NAME', DRANET))
    .addOption(new Option('--no-nics', "do not check the NICs' driver").env('FAKEGPU_NO_NICS'))
    .addOption(noComputeDomainsOption(`check ${COMPUTE_DOMAIN_DRIVER} (IMEX channels)`))
    .addOption(kubeconfigOption())
    .action(async (f: Flags, cmd: Command) => {
      // The plugin writes under the drivers a fleet of the same flags writes.
      const drivers = fleetDrivers({
        driverName: checkDriverName(f.driverName, sourceOf(cmd, 'driverName', '--driver-name')),
        nics: f.nics
          ? {
              driverName: checkDriverName(
                f.nicDriverName,
                sourceOf(cmd, 'nicDriverName', '--nic-driver-name'),
              ),
            }
          : undefined,
        computeDomains: f.computeDomains,
      });
      const kc = await loadKubeconfig(f.kubeconfig, cmd);
      // Loaded once the flags are checked: the API client is no part of other commands' start-up.
      const [{ askingApi }, { NODES_PATH }, { KubeObjects }, { allClear, heldClaims, pluginNodes, refusal }] =
        await Promise.all([
          import('../kube/gpufault/api.js'),
          import('../kube/api.js'),
          import('../kube/objects.js'),
          import('../node/plugin/uninstall-check.js'),
        ]);
      const api = new KubeObjects(kc);
      const nodes = pluginNodes(
        await askingApi(FIELD, 'listing nodes', () => api.list<Meta>(NODES_PATH, {}, true)),
      );
      const claims = await askingApi(FIELD, 'listing ResourceClaims', () =>
        api.list<ListedClaim>(CLAIMS_PATH),
      );
      const held = heldClaims(claims, nodes, drivers);
      if (held.length > 0) throw new FakegpuError(FIELD, refusal(held, drivers));
      write(`${allClear(drivers)}\n`);
    });
  return examples(c, [
    'fakegpu uninstall-check --kubeconfig ~/.kube/config && helm uninstall fakegpu -n nvidia-dra-driver-gpu',
  ]);
}
