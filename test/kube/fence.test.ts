import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fencedObjects, TermEnded } from '../../src/kube/fence.js';
import { FakeObjects } from '../support/fake-objects.js';

describe('fencedObjects', () => {
  it('sends a write only within the term, with what is left of it as the deadline', async () => {
    const store = new FakeObjects();
    const deadlines: (number | undefined)[] = [];
    const patch = store.patch.bind(store);
    store.patch = <T>(p: string, o: object, t?: number) => {
      deadlines.push(t);
      return patch<T>(p, o);
    };
    let clock = 1000;
    let end = 1500;
    const api = fencedObjects(
      store,
      () => end,
      () => clock,
    );
    store.seed('/api/v1/nodes', { metadata: { name: 'n' } });
    await api.patch('/api/v1/nodes/n', { metadata: { labels: { a: 'b' } } });
    await api.patch('/api/v1/nodes/n', { metadata: { labels: { a: 'c' } } }, 200);
    clock = 1499.2;
    await api.patch('/api/v1/nodes/n', { metadata: { labels: { a: 'd' } } });
    assert.deepEqual(deadlines, [500, 200, 1]);
    clock = 1500;
    await assert.rejects(api.patch('/api/v1/nodes/n', { metadata: { labels: { a: 'e' } } }), TermEnded);
    await assert.rejects(api.create('/api/v1/nodes', { metadata: { name: 'm' } }), /term has ended/);
    await assert.rejects(api.delete('/api/v1/nodes/n'), TermEnded);
    assert.equal(deadlines.length, 3, 'nothing sent after the term');
    assert.equal(
      store.read<{ metadata: { labels: Record<string, string> } }>('/api/v1/nodes/n')?.metadata.labels['a'],
      'd',
    );
    assert.ok(await api.get('/api/v1/nodes/n'), 'a read goes through');
    end = Infinity;
    await api.patch('/api/v1/nodes/n', {});
    assert.equal(deadlines.at(-1), undefined, "without a term's end, the client's own deadline");
  });
});
