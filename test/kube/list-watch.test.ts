import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { ListQuery, Page } from '../../src/kube/api.js';
import { ApiError, type WatchStreamHandlers } from '../../src/kube/client.js';
import { ListWatch, type Collection, type ListWatchOptions } from '../../src/kube/list-watch.js';
import { until } from '../support/http.js';

const log = pino({ level: 'silent' });

/** Two paths' worth of objects behind `list` and `watch`, with the watches at the test's command. */
class Source {
  readonly lists: { path: string; q: ListQuery }[] = [];
  readonly watches: { path: string; query: Record<string, string>; h: WatchStreamHandlers; open: boolean }[] =
    [];
  /** Path → pages of names; each list returns them with resourceVersion `rv`. */
  pages = new Map<string, string[][]>();
  rv = 10;
  failLists = 0;

  list(path: string, q: ListQuery): Promise<Page<unknown>> {
    this.lists.push({ path, q });
    if (this.failLists > 0) {
      this.failLists--;
      return Promise.reject(new ApiError(503, 'injected'));
    }
    const pages = this.pages.get(path) ?? [[]];
    const i = q.continue === undefined ? 0 : Number(q.continue);
    return Promise.resolve({
      items: (pages[i] ?? []).map((name) => ({ metadata: { name } })),
      resourceVersion: String(this.rv),
      continue: i + 1 < pages.length ? String(i + 1) : undefined,
    });
  }

  watch(path: string, query: Record<string, string>, _accept: string, h: WatchStreamHandlers): () => void {
    const w = { path, query, h, open: true };
    this.watches.push(w);
    return () => {
      w.open = false;
    };
  }

  /** The server ends the newest open watch of `path`. */
  end(path: string, err: unknown): void {
    const w = this.open(path);
    w.open = false;
    w.h.done(err);
  }

  open(path: string) {
    const w = this.watches.filter((x) => x.open && x.path === path).at(-1);
    assert.ok(w, `an open watch of ${path}`);
    return w;
  }
}

function collection(src: Source, path: string, got: string[], extra: Partial<Collection> = {}): Collection {
  return {
    path,
    list: (q) => src.list(path, q),
    page: (items) => {
      for (const o of items) got.push(`${path}:${(o as { metadata: { name: string } }).metadata.name}`);
    },
    event: (type, o) => got.push(`${type} ${path}:${(o as { metadata: { name: string } }).metadata.name}`),
    ...extra,
  };
}

/** A list-watch of `/a` alone over `src`, with no wait between retries, and the test's own hooks. */
function oneCollection(src: Source, o: Partial<ListWatchOptions> = {}): ListWatch {
  return new ListWatch({
    source: src,
    what: 'things',
    log,
    random: () => 0,
    collections: [collection(src, '/a', [])],
    listed: () => undefined,
    ...o,
  });
}

describe('the list-watch', () => {
  it('lists every page, then watches each collection from its list’s resourceVersion with its selectors', async () => {
    const src = new Source();
    src.pages.set('/a', [['a1'], ['a2']]);
    const got: string[] = [];
    let listed = 0;
    const lw = new ListWatch({
      source: src,
      what: 'things',
      log,
      collections: [
        collection(src, '/a', got, { labelSelector: 'l=1' }),
        collection(src, '/b', got, { fieldSelector: 'f=2' }),
      ],
      listed: () => {
        listed++;
      },
    });
    await lw.start();
    assert.equal(listed, 1);
    assert.deepEqual(got, ['/a:a1', '/a:a2']);
    assert.deepEqual(
      src.lists.map((l) => [l.path, l.q.labelSelector, l.q.fieldSelector, l.q.continue]),
      [
        ['/a', 'l=1', undefined, undefined],
        ['/b', undefined, 'f=2', undefined],
        ['/a', 'l=1', undefined, '1'],
      ],
    );
    assert.deepEqual(
      src.watches.map((w) => [w.path, w.query]),
      [
        ['/a', { labelSelector: 'l=1', resourceVersion: '10', allowWatchBookmarks: 'true' }],
        ['/b', { fieldSelector: 'f=2', resourceVersion: '10', allowWatchBookmarks: 'true' }],
      ],
    );
    src.open('/b').h.event('ADDED', { metadata: { name: 'b1', resourceVersion: '11' } });
    assert.equal(got.at(-1), 'ADDED /b:b1');
    lw.stop();
    assert.ok(src.watches.every((w) => !w.open));
  });

  it('relists every collection when one watch expires, then resumes them all from the new lists', async () => {
    const src = new Source();
    const got: string[] = [];
    let listing = 0;
    const lw = new ListWatch({
      source: src,
      what: 'things',
      log,
      collections: [collection(src, '/a', got), collection(src, '/b', got)],
      listing: () => {
        listing++;
      },
      listed: () => undefined,
    });
    await lw.start();
    src.rv = 42;
    src.pages.set('/b', [['b9']]);
    src.open('/a').h.event('ERROR', { code: 410 });
    src.end('/a', null);
    await until('both watches resumed from the relist', () =>
      ['/a', '/b'].every((p) =>
        src.watches.some((w) => w.open && w.path === p && w.query['resourceVersion'] === '42'),
      ),
    );
    assert.equal(listing, 2);
    assert.deepEqual(got, ['/b:b9']);
    assert.equal(src.lists.length, 4, 'each collection listed twice');
    lw.stop();
  });

  it('retries a failed list after a backoff, or after the caller’s delay where it gives one', async () => {
    const src = new Source();
    src.failLists = 2;
    const failures: number[] = [];
    const lw = oneCollection(src, {
      listFailed: (_e, n) => {
        failures.push(n);
        return n === 1 ? 1 : undefined;
      },
    });
    await lw.start();
    // The caller's own delay (a CRD not installed) is no failure of the server's: the next is the first.
    assert.deepEqual(failures, [1, 1]);
    assert.equal(src.lists.length, 3);
    assert.equal(src.watches.length, 1);
    lw.stop();
  });

  it('a failed `listed` counts as a failed list: no watch opens on what it refused', async () => {
    const src = new Source();
    let calls = 0;
    const lw = oneCollection(src, {
      listed: () => {
        if (++calls === 1) throw new Error('version unknown');
      },
    });
    await lw.start();
    assert.equal(calls, 2);
    assert.equal(src.watches.length, 1);
    lw.stop();
  });

  it('lists afresh when the caller says a watch failure means the resource went away', async () => {
    const src = new Source();
    const lw = oneCollection(src, {
      watchFailed: (e) => (e instanceof ApiError && e.code === 404 ? 'relist' : undefined),
    });
    await lw.start();
    src.end('/a', new ApiError(404, 'gone'));
    await until('a second list and a new watch', () => src.lists.length === 2 && src.watches.length === 2);
    assert.equal(src.watches.filter((w) => w.open).length, 1);
    lw.stop();
  });

  it('drops the pages of a list overtaken by stop, and start resolves on stop', async () => {
    const src = new Source();
    const got: string[] = [];
    let release: () => void = () => undefined;
    const lw = new ListWatch({
      source: src,
      what: 'things',
      log,
      collections: [
        collection(src, '/a', got, {
          list: (q) =>
            new Promise<Page<unknown>>((resolve) => {
              release = () => void src.list('/a', q).then(resolve);
            }),
        }),
      ],
      listed: () => assert.fail('no list was whole'),
    });
    src.pages.set('/a', [['late']]);
    const started = lw.start();
    lw.stop();
    await started;
    release();
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(got, []);
    assert.equal(src.watches.length, 0);
  });

  it('start after stop resolves at once and lists nothing', async () => {
    const src = new Source();
    const lw = oneCollection(src);
    lw.stop();
    await lw.start();
    assert.equal(src.lists.length, 0);
  });

  it('a failed list stops the other collections paging into what the next list replaces', async () => {
    const src = new Source();
    src.pages.set('/b', [['b1'], ['b2'], ['b3']]);
    const got: string[] = [];
    let fail = true;
    const lw = new ListWatch({
      source: src,
      what: 'things',
      log,
      // The retry waits ~0.5 s: the failed list's other pages come in long before it.
      random: () => 0.99,
      collections: [
        collection(src, '/a', got, {
          list: (q) => {
            if (!fail) return src.list('/a', q);
            fail = false;
            return Promise.reject(new ApiError(500, 'injected'));
          },
        }),
        collection(src, '/b', got, {
          list: async (q) => {
            await new Promise((r) => setTimeout(r, 5));
            return src.list('/b', q);
          },
        }),
      ],
      listing: () => got.push('listing'),
      listed: () => undefined,
    });
    await lw.start();
    assert.deepEqual(got, ['listing', 'listing', '/b:b1', '/b:b2', '/b:b3']);
    lw.stop();
  });
});
