import { FakegpuError } from '../errors.js';

/** `host:port` of an HTTP endpoint flag; an empty host listens on every address. */
export function splitEndpoint(ep: string): [string, number] {
  const i = ep.lastIndexOf(':');
  const port = Number(ep.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new FakegpuError(
      '--http-endpoint',
      `${JSON.stringify(ep)} is not host:port, e.g. "127.0.0.1:51516" or ":51516"`,
    );
  }
  return [ep.slice(0, i) || '0.0.0.0', port];
}
