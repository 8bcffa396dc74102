import { createServer } from 'node:http';
import { Command } from 'commander';
import { pino } from 'pino';
import { ComputeDomainController } from '../controllers/compute-domain/controller.js';
import { DAEMON_IMAGE } from '../local-cluster/image.js';
import { FakegpuError, show } from '../errors.js';
import { checkNamespace, KubeObjects } from '../kube/objects.js';
import { splitEndpoint } from '../process/endpoint.js';
import {
  checkEndpoint,
  driverNamespaceOption,
  envOption,
  kubeconfigOption,
  loadKubeconfig,
  sourceOf,
} from './options.js';

interface Flags {
  kubeconfig?: string;
  driverNamespace: string;
  daemonImage: string;
  imagePullPolicy: string;
  httpEndpoint: string;
}

const PULL = ['IfNotPresent', 'Never', 'Always'] as const;

export function computeDomainControllerCommand(): Command {
  return new Command('compute-domain-controller')
    .description(
      "run NVIDIA's ComputeDomain controller, emulated: claim templates, IMEX daemon DaemonSets and status for every ComputeDomain",
    )
    .addOption(kubeconfigOption())
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
      envOption('--http-endpoint <host:port>', 'serve /healthz here ("" for none)', 'HTTP_ENDPOINT', ''),
    )
    .action(async (f: Flags, cmd: Command) => {
      const namespace = checkNamespace(
        f.driverNamespace,
        sourceOf(cmd, 'driverNamespace', '--driver-namespace'),
      );
      const policy = PULL.find((p) => p === f.imagePullPolicy);
      if (!policy)
        throw new FakegpuError(
          sourceOf(cmd, 'imagePullPolicy', '--image-pull-policy'),
          `${show(f.imagePullPolicy)} is not a pull policy; expected one of ${PULL.join(', ')}`,
        );
      if (f.daemonImage.trim() === '')
        throw new FakegpuError(sourceOf(cmd, 'daemonImage', '--daemon-image'), 'must name an image');
      if (f.httpEndpoint)
        await checkEndpoint(f.httpEndpoint, sourceOf(cmd, 'httpEndpoint', '--http-endpoint'));
      const kc = await loadKubeconfig(f.kubeconfig, cmd);
      const log = pino({ name: 'fakegpu-compute-domain-controller' }, pino.destination(2));
      const controller = new ComputeDomainController({
        api: new KubeObjects(kc),
        namespace,
        image: f.daemonImage,
        imagePullPolicy: policy,
        log,
      });
      controller.start();
      log.info({ namespace, image: f.daemonImage }, 'reconciling ComputeDomains');
      const http = f.httpEndpoint
        ? createServer((req, res) => {
            if (req.url === '/healthz' || req.url === '/readyz')
              res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
            else res.writeHead(404).end();
          })
        : null;
      if (http) {
        const [host, port] = splitEndpoint(f.httpEndpoint);
        await new Promise<void>((r) => http.listen(port, host, r));
      }
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          log.info({ signal }, 'stopping');
          http?.close();
          void controller.stop().then(resolve);
        };
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
    });
}
