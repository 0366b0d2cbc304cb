/**
 * Serving the web UI's built files in the Node host (protocol §15.4). The UI is built into
 * packages/ui/dist by `npm run build`; "/" and any path without a file extension answer
 * index.html (the UI routes on the client), other paths answer the file or nothing. Paths never
 * leave the folder.
 */
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
};

export function nodeAssets(dir: string): (path: string) => Promise<Response | null> {
  // One trailing separator, whatever the caller gave ("…/dist" or "…/dist/").
  const root = normalize(dir).replace(/[\\/]+$/, '') + sep;
  return async (path) => {
    if (path.startsWith('/v1/') || path === '/healthz' || path === '/livez' || path === '/readyz' || path === '/metrics') return null;
    const wanted = extname(path) === '' ? '/index.html' : path;
    const file = normalize(join(root, decodeURIComponent(wanted)));
    if (!file.startsWith(root)) return null;
    try {
      if (!(await stat(file)).isFile()) return null;
      const body = await readFile(file);
      const immutable = file.includes(`${sep}assets${sep}`);
      return new Response(body, {
        status: 200,
        headers: {
          'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
          'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
        },
      });
    } catch {
      return null;
    }
  };
}
