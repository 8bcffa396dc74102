import { Command, CommanderError } from 'commander';
import { FakegpuError } from '../errors.js';
import { clusterCommand } from './cluster.js';
import { demoCommand } from './demo.js';
import { pluginCommand } from './plugin.js';
import { fleetCommand } from './fleet.js';
import { profilesCommand, renderCommand, topoCommand, validateCommand } from './commands.js';

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
    .exitOverride()
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) })
    .showHelpAfterError(false);
  program.addCommand(profilesCommand(write));
  program.addCommand(renderCommand(write));
  program.addCommand(validateCommand(write));
  program.addCommand(topoCommand(write));
  program.addCommand(fleetCommand());
  program.addCommand(clusterCommand(write));
  program.addCommand(pluginCommand());
  program.addCommand(demoCommand(write));
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    if (e instanceof FakegpuError) {
      process.stderr.write(`fakegpu: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  process.stdout.write(out);
  return 0;
}
