import { Command } from 'commander';
import type { ControllerRunOptions } from '../controllers/compute-domain/run.js';
import { DAEMON_IMAGE } from '../local-cluster/image.js';
import { FakegpuError, show } from '../errors.js';
import { checkNamespace } from '../kube/types/names.js';
import {
  checkEndpoint,
  checkKubeconfig,
  driverNamespaceOption,
  checkLeaderElection,
  envOption,
  kubeconfigOption,
  leaderElectionOptions,
  logLevelOf,
  logVerbosityOption,
  sourceOf,
  type LeaderElectionFlags,
} from './options.js';
import { examples } from './flags.js';

interface Flags extends LeaderElectionFlags {
  v: string;
  kubeconfig?: string;
  driverNamespace: string;
  daemonImage: string;
  imagePullPolicy: string;
  httpEndpoint: string;
}

const PULL = ['IfNotPresent', 'Never', 'Always'] as const;

export function computeDomainControllerCommand(): Command {
  const c = leaderElectionOptions(
    new Command('compute-domain-controller'),
    'fakegpu-compute-domain-controller',
  )
    .description(
      "run NVIDIA's ComputeDomain controller, emulated: claim templates, IMEX daemon DaemonSets and status for every ComputeDomain",
    )
    .addOption(kubeconfigOption())
    .addOption(logVerbosityOption())
    .addOption(driverNamespaceOption('daemon claim templates, DaemonSets and cliques go there'))
    .addOption(
      envOption(
        '--daemon-image <ref>',
        "the IMEX daemon's image (fakegpu's stand-in)",
        'FAKEGPU_DAEMON_IMAGE',
        DAEMON_IMAGE,
      ),
    )
    .addOption(
      envOption(
        '--image-pull-policy <policy>',
        "the daemon container's pull policy",
        'FAKEGPU_IMAGE_PULL_POLICY',
        'IfNotPresent',
      ),
    )
    .addOption(
      envOption(
        '--http-endpoint <host:port>',
        'serve /healthz and /readyz here ("" for none)',
        'HTTP_ENDPOINT',
        '',
      ),
    )
    .action(controllerAction);
  return examples(c, [
    'fakegpu compute-domain-controller --kubeconfig ~/.kube/config --driver-namespace nvidia-dra-driver-gpu',
  ]);
}

async function controllerAction(f: Flags, cmd: Command): Promise<void> {
  // Every input is checked before anything starts (API calls, the HTTP server), each in one line.
  const namespace = checkNamespace(f.driverNamespace, sourceOf(cmd, 'driverNamespace', '--driver-namespace'));
  const policy = PULL.find((p) => p === f.imagePullPolicy);
  if (!policy)
    throw new FakegpuError(
      sourceOf(cmd, 'imagePullPolicy', '--image-pull-policy'),
      `${show(f.imagePullPolicy)} is not a pull policy; expected one of ${PULL.join(', ')}`,
    );
  const election = checkLeaderElection(f, cmd);
  const level = logLevelOf(f.v, cmd);
  if (f.daemonImage.trim() === '')
    throw new FakegpuError(sourceOf(cmd, 'daemonImage', '--daemon-image'), 'must name an image');
  if (f.httpEndpoint) await checkEndpoint(f.httpEndpoint, sourceOf(cmd, 'httpEndpoint', '--http-endpoint'));
  await checkKubeconfig(f.kubeconfig, sourceOf(cmd, 'kubeconfig', '--kubeconfig'));
  // Loaded once the flags are checked: the API client and the logger are no part of other commands' start-up.
  const [{ pino }, { runComputeDomainController }, { leaseIdentity }, { runUntilStopped }] =
    await Promise.all([
      import('pino'),
      import('../controllers/compute-domain/run.js'),
      import('../kube/lease.js'),
      import('../process/shutdown.js'),
    ]);
  const log = pino({ name: 'fakegpu-compute-domain-controller', level }, pino.destination(2));
  const options: ControllerRunOptions = {
    kubeconfig: f.kubeconfig,
    namespace,
    image: f.daemonImage,
    imagePullPolicy: policy,
    httpEndpoint: f.httpEndpoint,
    log,
    leaderElection: election ? { ...election, identity: leaseIdentity() } : undefined,
  };
  await runUntilStopped(() => runComputeDomainController(options), { log });
}
