import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { FakegpuError } from '../errors.js';
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
import { beforeParse, oneLineErrors } from './usage.js';
import { examples, nodeAliases } from './flags.js';

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
