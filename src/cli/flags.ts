import { type Command, InvalidArgumentError, Option } from 'commander';
import { oneOf } from '../errors.js';
import { parseKubernetesVersion, type Semver } from '../kube/types/version.js';
import { DEFAULT_KUBERNETES_RELEASE } from '../local-cluster/releases.js';

/**
 * The flags every command spells one way, as kubectl does: `-o` is always an output format, a file or
 * folder written instead of standard output has a flag of its own, one node flag, one Kubernetes version.
 */

/** kubectl's output formats; each command takes the ones that make sense for what it prints. */
export const FORMATS = ['json', 'yaml', 'wide', 'name'] as const;
export type OutputFormat = (typeof FORMATS)[number];

/** A file written instead of standard output. */
export const OUTPUT_FILE = '--output-file';
/** A folder written by a command whose output is many files. */
export const OUTPUT_DIR = '--output-dir';

/**
 * `-o, --output <format>` taking `formats`. Anything else is refused as a usage error before the command
 * runs, so that `-o profile.yaml` (what `-o` meant on some commands before) never becomes a file named
 * after a format, nor a format named after a file; `file` names the flag that writes one instead.
 */
export function outputOption<F extends OutputFormat>(
  formats: readonly F[],
  what: string,
  o: { default?: F; file?: string } = {},
): Option {
  const dflt = o.default === undefined ? '' : ` (default: ${o.default})`;
  const hint = o.file === undefined ? '' : `; to write a file give ${o.file}`;
  return new Option('-o, --output <format>', `output format: ${formats.join('|')}${dflt}`).argParser(
    (v: string): F => {
      const f = formats.find((x) => x === v);
      if (f === undefined)
        throw new InvalidArgumentError(
          `is not an output format of ${what}; allowed: ${oneOf(formats)}${o.default === undefined ? ` (leave -o out for the ${defaultForm(what)})` : ''}${hint}`,
        );
      return f;
    },
  );
}

function defaultForm(what: string): string {
  return what === 'profiles' || what === 'fault list' ? 'table' : 'text';
}

/**
 * `-o` on a command that prints no format but writes a file or folder, where `-o` used to name it: refused
 * with the flag that does that now, so an old command line never writes somewhere unexpected.
 */
export function movedOutputOption(what: string, flag: string): Option {
  return new Option('-o, --output <format>').hideHelp().argParser((): never => {
    throw new InvalidArgumentError(
      `is not an output format: ${what} prints none; give where it writes with ${flag}`,
    );
  });
}

/**
 * `-n, --node-name <name>`, the node as kubelet and NVIDIA's plugin name it; `nodeAliases` adds `--node`.
 */
export function nodeNameOption(desc: string, o: { required?: boolean; default?: string } = {}): Option {
  const opt = new Option('-n, --node-name <name>', desc);
  if (o.default !== undefined) opt.default(o.default);
  if (o.required === true) opt.makeOptionMandatory();
  return opt;
}

/**
 * `--node`, the spelling of some commands before, as a hidden alias of `--node-name` on every command
 * that has it: nothing else on those commands is named like it, so it cannot be read two ways.
 */
export function nodeAliases(cmd: Command): void {
  if (cmd.options.some((o) => o.long === '--node-name') && !cmd.options.some((o) => o.long === '--node')) {
    cmd.addOption(new Option('--node <name>').hideHelp());
    cmd.on('option:node', (v: string) => {
      cmd.setOptionValueWithSource('nodeName', v, 'cli');
    });
  }
  for (const c of cmd.commands) nodeAliases(c);
}

/** The API server version assumed where none is asked: the default release's, `<minor>.0`. */
export const DEFAULT_KUBERNETES_VERSION = `${DEFAULT_KUBERNETES_RELEASE}.0`;

/** One help text for `--kubernetes-version`, whatever the command does with it. */
export function kubernetesVersionOption(use: string, dflt = DEFAULT_KUBERNETES_VERSION): Option {
  return new Option(
    '--kubernetes-version <version>',
    `Kubernetes version, a release (1.37) or a full version (1.37.2): ${use}`,
  ).default(dflt);
}

/** The one parser of `--kubernetes-version`: a release `1.37` is its `.0`. */
export function kubernetesVersionFlag(text: string, field = '--kubernetes-version'): Semver {
  return parseKubernetesVersion(text, field);
}

/** `Examples:` after a command's help, each line a command as typed. */
export function examplesText(lines: readonly string[]): string {
  return `\nExamples:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;
}

export function examples(c: Command, lines: readonly string[]): Command {
  return c.addHelpText('after', examplesText(lines));
}

/** `examples` for the command `name` of `group`, for groups that define their commands in one chain. */
export function examplesOf(group: Command, name: string, lines: readonly string[]): void {
  const c = group.commands.find((x) => x.name() === name);
  if (c === undefined) throw new Error(`no command ${name} in ${group.name()}`);
  examples(c, lines);
}
