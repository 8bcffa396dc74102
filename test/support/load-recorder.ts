// Module hooks (`module.register`) that append every module a process resolves to a file, one URL a
// line: which modules a command loads, seen from outside and independent of timing.
import { appendFileSync } from 'node:fs';
import type { InitializeHook, ResolveHook } from 'node:module';

let log = '';

export const initialize: InitializeHook<string> = (file) => {
  log = file;
};

export const resolve: ResolveHook = async (specifier, context, next) => {
  const r = await next(specifier, context);
  appendFileSync(log, `${r.url}\n`);
  return r;
};
