import type { Command } from 'commander';
import { show } from '../errors.js';

/** `fakegpu capture node`: the words a user types to reach `cmd`. */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** `capture node`: the command as an error line names it, after `fakegpu: `. */
function fieldOf(cmd: Command): string {
  return commandPath(cmd).split(' ').slice(1).join(' ');
}

/** How long a usage line may grow: commander lists choices and suggestions, never megabytes. */
const LONGEST = 400;

/** Where a usage error sends the user: the help of the command it was typed for. */
export function pointer(cmd: Command): string {
  return `see '${commandPath(cmd)} --help'`;
}

/** A user's text that commander quotes whole, cut as our own messages cut values. */
function cutQuoted(text: string): string {
  return text.replace(/'([^']{81,})'/g, (_, v: string) => show(v));
}

/** Why commander refused a value, said after the value: our parsers' words, or its choices. */
function reason(why: string): string {
  const choices = /^Allowed choices are (.*?)\.?$/.exec(why);
  if (choices) return `is not allowed; allowed: ${choices[1] ?? ''}`;
  return why === '' ? 'is invalid' : why.replace(/\.$/, '');
}

/**
 * A message of commander's in the form of ours: one line, the flag first, the value cut, and a pointer to
 * the command's help. `option '-o, --output <format>' argument 'x' is invalid. Allowed choices are a, b.`
 * becomes `-o, --output: "x" is not allowed; allowed: a, b`.
 */
export function usageLine(message: string, cmd: Command): string {
  let s = message
    .replace(/^error: /, '')
    .trim()
    .replace(/\s*\n\s*/g, ' ');
  const bad =
    /^option '([^']*?)(?: <[^>]*>| \[[^\]]*\])?' argument '([\s\S]*)' is invalid\. ?([\s\S]*)$/.exec(s);
  if (bad) s = `${bad[1] ?? ''}: ${show(bad[2])} ${reason(bad[3] ?? '')}`;
  else s = cutQuoted(s);
  return `fakegpu: ${s.length > LONGEST ? `${s.slice(0, LONGEST)}…` : s} (${pointer(cmd)})\n`;
}

/** Every command's commander errors as `usageLine`s naming that command's help. */
export function oneLineErrors(cmd: Command): void {
  cmd.configureOutput({
    outputError: (s, write) => {
      write(usageLine(s, cmd));
    },
  });
  for (const c of cmd.commands) oneLineErrors(c);
}

export interface Answer {
  code: number;
  stdout?: string;
  stderr?: string;
}

const find = (cmd: Command, name: string): Command | undefined =>
  cmd.commands.find((c) => c.name() === name || c.aliases().includes(name));

/** The help a command prints for `--help`, with its examples, as text. */
function helpOf(cmd: Command): string {
  let text = '';
  const saved = cmd.configureOutput();
  cmd.configureOutput({
    writeOut: (s) => {
      text += s;
    },
  });
  cmd.outputHelp();
  cmd.configureOutput(saved);
  return text;
}

/** `help [command...]` of `group`: that command's help, as `--help` prints it. */
function helpTopic(group: Command, topic: readonly string[]): Answer {
  if (topic[0] === 'help') {
    const path = commandPath(group);
    return {
      code: 0,
      stdout: `Usage: ${path} help [command...]\n\nprint the help of ${path} or of one of its commands, as --help does\n\nExamples:\n  ${path} help\n  fakegpu help capture node\n`,
    };
  }
  let cmd = group;
  for (const name of topic) {
    const sub = find(cmd, name);
    if (!sub) {
      const names = cmd.commands.map((c) => c.name()).join(', ');
      return {
        code: 2,
        stderr: `fakegpu: ${[fieldOf(cmd), 'help'].filter(Boolean).join(' ')}: unknown command ${show(name)}; commands: ${names} (${pointer(cmd)})\n`,
      };
    }
    cmd = sub;
  }
  return { code: 0, stdout: helpOf(cmd) };
}

/**
 * What commander would answer with many lines of help as an error. A bare `fakegpu` is help, on standard
 * output with exit 0, as a bare `kubectl` is. A bare command group (`fakegpu capture`) is a command line
 * missing its command: one line naming the commands and the help, exit 2; kubectl prints the whole help
 * on stderr and exits 1 there, which the one-line rule of fakegpu's usage errors does not allow. `help`
 * takes a path of commands (`help capture node`) and `help help` answers too.
 */
export function beforeParse(program: Command, argv: readonly string[]): Answer | null {
  let cmd = program;
  for (const [i, arg] of argv.entries()) {
    const sub = find(cmd, arg);
    if (sub) {
      cmd = sub;
      continue;
    }
    if (arg !== 'help' || cmd.commands.length === 0) return null;
    const topic = argv.slice(i + 1);
    return topic.some((t) => t.startsWith('-')) ? null : helpTopic(cmd, topic);
  }
  if (cmd.commands.length === 0) return null;
  if (cmd === program) return { code: 0, stdout: helpOf(program) };
  const names = cmd.commands.map((c) => c.name()).join(', ');
  return {
    code: 2,
    stderr: `fakegpu: ${fieldOf(cmd)}: give a command: ${names} (${pointer(cmd)})\n`,
  };
}
