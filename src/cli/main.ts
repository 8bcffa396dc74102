import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { FakegpuError, show } from '../errors.js';
import { clusterCommand } from './cluster.js';
import { computeDomainControllerCommand } from './compute-domain.js';
import { demoCommand } from './demo.js';
import { faultCommand } from './fault.js';
import { pluginCommand } from './plugin.js';
import { fleetCommand } from './fleet.js';
import { captureCommand, diffCommand } from './capture.js';
import { OutputWithStatus } from './output.js';
import { profilesCommand, renderCommand, topoCommand, validateCommand } from './commands.js';
import { exportCommand } from './export.js';
import { imageCommand } from './image.js';
import { uninstallCheckCommand } from './uninstall-check.js';

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

/**
 * Runs the CLI. Output is collected and written only on success, so a failing command prints nothing
 * to stdout and one line to stderr.
 */
export async function main(argv: readonly string[]): Promise<number> {
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
  program.addCommand(profilesCommand(write));
  program.addCommand(renderCommand(write));
  program.addCommand(exportCommand(write));
  program.addCommand(validateCommand(write));
  program.addCommand(topoCommand(write));
  program.addCommand(diffCommand(write));
  program.addCommand(captureCommand(write));
  program.addCommand(fleetCommand());
  program.addCommand(clusterCommand(write));
  program.addCommand(imageCommand(write));
  program.addCommand(pluginCommand());
  program.addCommand(computeDomainControllerCommand());
  program.addCommand(demoCommand(write));
  program.addCommand(faultCommand(write));
  program.addCommand(uninstallCheckCommand(write));
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
