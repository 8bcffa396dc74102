import { pino, type Logger } from 'pino';

/** A line as pino writes it: its message and whatever fields the call site added. */
export interface LogLine {
  msg: string;
  [field: string]: unknown;
}

/** A logger whose lines a test reads back, parsed, in the order they were written. */
export function recordingLog(level: 'info' | 'warn' = 'warn'): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = pino({ level }, { write: (l: string) => lines.push(JSON.parse(l) as LogLine) });
  return { log, lines };
}
