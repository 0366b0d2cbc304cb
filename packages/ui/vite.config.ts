// Builds the UI into dist/ (served by `rivulet serve` at /; see packages/server/src/hosts/node/assets.ts).
//
// The UI uses a small part of the SDK (createClient, RivuletError, canonicalizePath). The SDK, its
// contract and their dependencies only declare schemas, functions and classes at module level, so
// every module outside the UI's own sources is treated as free of side effects: whatever the UI
// does not use (zod schemas, the RPC transport) stays out of the bundle.
//
// `npm run dev -w @rivulet/ui` serves the sources with hot reload and forwards the API to a server
// on RIVULET_URL (default http://127.0.0.1:7420), so the page keeps talking to its own origin.
import { defineConfig } from 'vite';

const uiSources = /[\\/]packages[\\/]ui[\\/]src[\\/]/;
const api = process.env.RIVULET_URL ?? 'http://127.0.0.1:7420';

export default defineConfig({
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // One entry chunk: no preload polyfill needed.
    modulePreload: { polyfill: false },
    rollupOptions: {
      treeshake: {
        moduleSideEffects: (id: string) => uiSources.test(id),
      },
    },
  },
  server: {
    proxy: {
      '/v1': { target: api, changeOrigin: true },
      '/metrics': { target: api, changeOrigin: true },
      '/healthz': { target: api, changeOrigin: true },
    },
  },
});
