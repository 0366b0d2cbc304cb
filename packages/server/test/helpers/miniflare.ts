/**
 * Running code under workerd through Miniflare in tests (and benchmarks): bundling a Worker entry
 * from the TypeScript sources with esbuild (the workspace packages resolve to their sources, as in
 * vitest.config.ts; `cloudflare:*` stays external for workerd to provide), and the Miniflare options
 * every Rivulet Worker shares. Everything is local: workerd ships inside the `workerd` npm package,
 * nothing is fetched at run time.
 */
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = (p: string) => fileURLToPath(new URL(`../../../../${p}`, import.meta.url));

/** The compatibility date the Worker is built and tested for (wrangler.jsonc carries the same). */
export const COMPATIBILITY_DATE = '2026-04-01';

const bundles = new Map<string, Promise<string>>();

/** One ES module holding `entry` and everything it imports (cached per process). */
export function bundleWorker(entry: string): Promise<string> {
  let bundle = bundles.get(entry);
  if (!bundle) {
    bundle = build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      mainFields: ['module', 'main'],
      conditions: ['workerd', 'worker', 'browser', 'import'],
      external: ['cloudflare:*'],
      alias: {
        '@rivulet/contract': root('packages/contract/src/index.ts'),
      },
      logLevel: 'silent',
      sourcemap: false,
    }).then((result) => result.outputFiles[0]!.text);
    bundles.set(entry, bundle);
  }
  return bundle;
}

/** The path of a file of the server package from this folder's point of view. */
export function serverFile(p: string): string {
  return root(`packages/server/${p}`);
}
