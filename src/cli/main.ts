import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { FakegpuError } from '../errors.js';

/** Exit status of a command line commander refuses (unknown option or command, missing argument). */
const USAGE = 2;
/** Exit status of input fakegpu refuses (a FakegpuError). */
const BAD_INPUT = 1;

function packageVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'));
  return typeof pkg === 'object' && pkg !== null && 'version' in pkg ? String(pkg.version) : 'unknown';
}

/**
 * Subcommands built on their own do not inherit the program's settings, so without this an error in one
 * of them would exit 1 through commander's own `process.exit` and print its message its own way.
 */
function inherit(parent: Command): void {
  for (const c of parent.commands) {
    c.copyInheritedSettings(parent);
    inherit(c);
  }
}

type Write = (s: string) => void;

/**
 * Every command, in the order help lists them, and how to make it. Modules load here rather than at the
 * top (`--version` needs none), and a command line that starts with a command's name loads that
 * command's module alone (every command is needed only for help and for a name that is none of them).
 * Each module imports what its actions need (the API client, gRPC, the cluster's code) when they run.
 */
export const COMMANDS: readonly (readonly [string, (write: Write) => Promise<Command>])[] = [
  ['profiles', async (w) => (await import('./commands.js')).profilesCommand(w)],
  ['render', async (w) => (await import('./commands.js')).renderCommand(w)],
  ['export', async (w) => (await import('./export.js')).exportCommand(w)],
  ['validate', async (w) => (await import('./commands.js')).validateCommand(w)],
  ['topo', async (w) => (await import('./commands.js')).topoCommand(w)],
  ['diff', async (w) => (await import('./capture.js')).diffCommand(w)],
  ['capture', async (w) => (await import('./capture.js')).captureCommand(w)],
  ['fleet', async () => (await import('./fleet.js')).fleetCommand()],
  ['cluster', async (w) => (await import('./cluster.js')).clusterCommand(w)],
  ['image', async (w) => (await import('./image.js')).imageCommand(w)],
  ['plugin', async () => (await import('./plugin.js')).pluginCommand()],
  [
    'compute-domain-controller',
    async () => (await import('./compute-domain.js')).computeDomainControllerCommand(),
  ],
  ['demo', async (w) => (await import('./demo.js')).demoCommand(w)],
  ['fault', async (w) => (await import('./fault.js')).faultCommand(w)],
  ['report', async (w) => (await import('./report.js')).reportCommand(w)],
  ['uninstall-check', async (w) => (await import('./uninstall-check.js')).uninstallCheckCommand(w)],
];

async function addCommands(program: Command, write: Write, argv: readonly string[]): Promise<void> {
  const named = COMMANDS.filter(([name]) => name === argv[0]);
  const made = await Promise.all((named.length > 0 ? named : COMMANDS).map(([, make]) => make(write)));
  for (const c of made) program.addCommand(c);
}

/**
 * Runs the CLI. Output is collected and written only on success, so a failing command prints nothing
 * to stdout and one line to stderr.
 */
export async function main(argv: readonly string[]): Promise<number> {
  // Answered before any command's module loads (as commander would answer it): it needs none.
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  const [{ OutputWithStatus }, { beforeParse, oneLineErrors }, { examples, nodeAliases }] = await Promise.all(
    [import('./output.js'), import('./usage.js'), import('./flags.js')],
  );
  let out = '';
  const write = (s: string): void => {
    out += s;
  };
  const program = new Command('fakegpu')
    .description('NVIDIA GPU machines for Kubernetes DRA, without GPUs')
    .version(packageVersion(), '-V, --version', 'print the version of fakegpu')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => process.stdout.write(s),
      writeErr: (s) => process.stderr.write(s),
    })
    .showHelpAfterError(false);
  await addCommands(program, write, argv);
  examples(program, [
    'fakegpu profiles',
    'fakegpu render -p dgx-h100 -n node-1',
    'eval "$(fakegpu cluster up -p dgx-h100)"',
    'fakegpu help render',
  ]);
  nodeAliases(program);
  inherit(program);
  // After inherit, which shares the program's output settings: each command's errors name its own help.
  oneLineErrors(program);
  const early = beforeParse(program, argv);
  if (early !== null) {
    process.stdout.write(early.stdout ?? '');
    process.stderr.write(early.stderr ?? '');
    return early.code;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : USAGE;
    if (e instanceof OutputWithStatus) {
      process.stdout.write(out);
      return e.status;
    }
    if (e instanceof FakegpuError) {
      process.stderr.write(`fakegpu: ${e.message}\n`);
      return BAD_INPUT;
    }
    throw e;
  }
  process.stdout.write(out);
  return 0;
}
