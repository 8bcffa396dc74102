import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { FakegpuError, show } from '../errors.js';

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

/**
 * `help nope`: commander would print the whole help, as for `help`; the command line names a command that
 * does not exist, so it is a usage error like `fakegpu nope`.
 */
function unknownHelpTopic(program: Command, argv: readonly string[]): string | null {
  const find = (cmd: Command, name: string): Command | undefined =>
    cmd.commands.find((c) => c.name() === name || c.aliases().includes(name));
  let cmd = program;
  const path: string[] = [];
  for (const [i, arg] of argv.entries()) {
    const sub = find(cmd, arg);
    if (sub) {
      cmd = sub;
      path.push(arg);
      continue;
    }
    const topic = argv[i + 1];
    if (arg !== 'help' || topic === undefined || topic.startsWith('-') || find(cmd, topic)) return null;
    if (cmd.commands.length === 0) return null;
    const names = cmd.commands.map((c) => c.name()).join(', ');
    return `${[...path, 'help'].join(' ')}: unknown command ${show(topic)}; commands: ${names}`;
  }
  return null;
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
  const { OutputWithStatus } = await import('./output.js');
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
      // Commander's own errors in the form of ours: one line, prefixed, its suggestion on the same line.
      outputError: (s, w) => {
        w(
          `fakegpu: ${s
            .replace(/^error: /, '')
            .trim()
            .replace(/\s*\n\s*/g, ' ')}\n`,
        );
      },
    })
    .showHelpAfterError(false);
  await addCommands(program, write, argv);
  inherit(program);
  const topic = unknownHelpTopic(program, argv);
  if (topic !== null) {
    process.stderr.write(`fakegpu: ${topic}\n`);
    return USAGE;
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
