/** The stream tree (src/tree.ts). */
import type { StreamListEntry } from '@rivulet/client';
import { describe, expect, it } from 'vitest';
import { buildTree, countStreams, type TreeNode } from '../src/tree.js';

const entry = (path: string, maxOffset = 1): StreamListEntry => ({ path, streamId: `id-${path}`, createdAt: '2026-11-30T10:00:00.000Z', maxOffset });

const shape = (node: TreeNode): unknown => [node.path, node.stream ? node.stream.maxOffset : null, node.children.map(shape)];

describe('tree', () => {
  it('folds paths into segments, with folders for prefixes that are not streams', () => {
    const root = buildTree([entry('/shop/orders', 5), entry('/shop', 2), entry('/a/b/c', 1), entry('/shop/invoices', 3)]);
    expect(shape(root)).toEqual([
      '/',
      null,
      [
        ['/a', null, [['/a/b', null, [['/a/b/c', 1, []]]]]],
        ['/shop', 2, [['/shop/invoices', 3, []], ['/shop/orders', 5, []]]],
      ],
    ]);
    expect(countStreams(root)).toBe(4);
  });

  it('keeps the root stream on the root node and filters case-insensitively', () => {
    const root = buildTree([entry('/', 9), entry('/Shop/Orders'), entry('/shop/invoices')], 'orders');
    expect(root.stream?.maxOffset).toBeUndefined();
    expect(shape(root)).toEqual(['/', null, [['/Shop', null, [['/Shop/Orders', 1, []]]]]]);
    expect(buildTree([entry('/', 9)]).stream?.maxOffset).toBe(9);
  });
});
