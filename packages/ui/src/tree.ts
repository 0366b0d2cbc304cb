/**
 * The stream tree: stream paths folded into nested segments. A node is a stream, a folder (a
 * prefix that is not itself a stream), or both. Pure, so Node tests cover it.
 */
import type { StreamListEntry } from '@rivulet/client';

export interface TreeNode {
  /** The last segment ("orders"), or "/" for the root. */
  name: string;
  /** The node's full path ("/shop/orders"). */
  path: string;
  /** Present when the node is itself a stream. */
  stream?: StreamListEntry;
  children: TreeNode[];
}

/** Every stream whose path contains `query` (case-insensitive), with their ancestors as folders. */
export function buildTree(streams: readonly StreamListEntry[], query = ''): TreeNode {
  const needle = query.trim().toLowerCase();
  const root: TreeNode = { name: '/', path: '/', children: [] };
  for (const stream of streams) {
    if (needle !== '' && !stream.path.toLowerCase().includes(needle)) continue;
    let node = root;
    const segments = stream.path.split('/').filter((s) => s !== '');
    let path = '';
    for (const segment of segments) {
      path += `/${segment}`;
      let child = node.children.find((c) => c.name === segment);
      if (!child) {
        child = { name: segment, path, children: [] };
        node.children.push(child);
      }
      node = child;
    }
    node.stream = stream;
  }
  sort(root);
  return root;
}

function sort(node: TreeNode): void {
  node.children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const child of node.children) sort(child);
}

/** How many streams the tree holds. */
export function countStreams(node: TreeNode): number {
  return (node.stream ? 1 : 0) + node.children.reduce((n, c) => n + countStreams(c), 0);
}
