import { FakegpuError } from '../errors.js';

/** `host:port` as the flags take it: the host may be empty, the port is 0 to 65535 in digits. */
export function parseEndpoint(text: string): { host: string; port: number } | null {
  const i = text.lastIndexOf(':');
  const port = text.slice(i + 1);
  if (i < 0 || !/^\d{1,5}$/.test(port) || Number(port) > 65535) return null;
  return { host: text.slice(0, i), port: Number(port) };
}

/** `host:port` of an HTTP endpoint flag; an empty host listens on every address. */
export function splitEndpoint(ep: string): [string, number] {
  const e = parseEndpoint(ep);
  if (!e) {
    throw new FakegpuError(
      '--http-endpoint',
      `${JSON.stringify(ep)} is not host:port, e.g. "127.0.0.1:51516" or ":51516"`,
    );
  }
  return [e.host || '0.0.0.0', e.port];
}
