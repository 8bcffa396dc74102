import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A slow API server, made of a real one: a loopback TCP proxy in front of it (TLS passes through
 * untouched) that delays or stalls what goes either way, requests and answers alike, GETs of Leases
 * included. Each connection keeps its bytes in order. When either end closes, what the proxy still
 * holds for that connection is dropped, as a request aborted by its client dies with its connection:
 * that is what a client's deadline buys it, and what the suite relies on to say a write was sent in
 * time. (Bytes a real network still carries after the client gave up are what the lease margin, 5 s
 * between the renew deadline and the lease duration, is for, as in client-go; no client can do more.)
 */

export type Weather = 'clear' | 'slow' | 'stall';

interface Held {
  at: number;
  chunk: Buffer;
}

/**
 * One direction of one connection: chunks released in order, each no sooner than its time. A chunk
 * falls due in the timers phase of the event loop, but a close that came meanwhile is read only in the
 * poll phase after it; so the due chunks go out in the check phase (`setImmediate`), once what the
 * sockets said this turn has been heard, and not at all once the connection has been dropped.
 */
class Lane {
  private readonly queue: Held[] = [];
  private timer: NodeJS.Timeout | undefined;
  private last = 0;
  private dropped = false;

  constructor(
    private readonly to: Socket,
    private readonly delay: () => number,
  ) {}

  push(chunk: Buffer): void {
    if (this.dropped) return;
    this.last = Math.max(this.last, Date.now() + this.delay());
    this.queue.push({ at: this.last, chunk });
    if (this.queue.length === 1) this.arm();
  }

  private arm(): void {
    const head = this.queue[0];
    if (!head || this.dropped) return;
    this.timer = setTimeout(
      () => {
        setImmediate(() => {
          this.release();
        });
      },
      Math.max(0, head.at - Date.now()),
    );
  }

  private release(): void {
    const now = Date.now();
    while (!this.dropped && this.queue[0] && this.queue[0].at <= now) {
      const h = this.queue.shift();
      if (h && !this.to.destroyed) this.to.write(h.chunk);
    }
    this.arm();
  }

  drop(): void {
    this.dropped = true;
    clearTimeout(this.timer);
    this.queue.length = 0;
  }
}

export class SlowProxy {
  private weather: Weather = 'clear';
  private stallUntil = 0;
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  /** Time spent in each weather, and connections made: the suite's last line says what it met. */
  readonly seen = { slow: 0, stall: 0, connections: 0 };

  constructor(
    private readonly target: { host: string; port: number },
    private readonly random: () => number,
  ) {}

  /** The delay of a chunk sent now: none, 50 ms to 1.5 s, or until the stall ends (6 to 12 s). */
  private delay(): number {
    if (this.weather === 'slow') return 50 + Math.floor(this.random() * 1450);
    if (this.weather === 'stall') return Math.max(0, this.stallUntil - Date.now());
    return 0;
  }

  set(w: Weather): void {
    // A stall drawn during a stall lengthens it: its time counted is always what was added.
    if (w === 'stall')
      this.stallUntil = Math.max(this.stallUntil, Date.now()) + 6000 + Math.floor(this.random() * 6000);
    this.weather = w;
  }

  /** The weather changes every 1 to 4 s, until `stop()`: clear 40%, slow 40%, a stall 20%. */
  private ticker: NodeJS.Timeout | undefined;
  vary(): void {
    clearTimeout(this.ticker);
    const next = (): void => {
      const r = this.random();
      const w: Weather = r < 0.4 ? 'clear' : r < 0.8 ? 'slow' : 'stall';
      const before = Math.max(this.stallUntil, Date.now());
      this.set(w);
      const ms = w === 'stall' ? this.stallUntil - before : 1000 + Math.floor(this.random() * 3000);
      if (w !== 'clear') this.seen[w] += ms;
      this.ticker = setTimeout(next, ms);
    };
    next();
  }

  calm(): void {
    clearTimeout(this.ticker);
    this.set('clear');
  }

  listen(): Promise<number> {
    const server = createServer((client) => {
      this.seen.connections++;
      const upstream = connect(this.target.port, this.target.host);
      const up = new Lane(upstream, () => this.delay());
      const down = new Lane(client, () => this.delay());
      const close = (): void => {
        up.drop();
        down.drop();
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      // A FIN ('end') drops the connection at once: with half-open sockets off, 'close' comes a turn later.
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', close);
        s.on('end', close);
        s.on('close', close);
      }
      client.on('data', (b: Buffer) => {
        up.push(b);
      });
      upstream.on('data', (b: Buffer) => {
        down.push(b);
      });
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : 0);
      });
    });
  }

  close(): void {
    this.calm();
    for (const s of this.sockets) s.destroy();
    this.server?.close();
  }
}
