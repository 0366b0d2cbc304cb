/**
 * A real Rivulet server for end-to-end tests: startNodeServer on 127.0.0.1, port 0, a fresh data
 * folder under os.tmpdir() that close() removes again. Everything else is passed through.
 *
 * With RIVULET_TEST_HOST=worker (the "worker" vitest project, vitest.config.ts) the same call starts
 * the Cloudflare Workers host under Miniflare instead (worker-host.ts), answering the same shape;
 * `server` (the Node host's handle) is not available there.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNodeServer, type NodeServerOptions, type RunningServer } from '../../src/hosts/node/serve.js';
import { Api } from './http.js';
import { startWorkerHost } from './worker-host.js';

export interface TestServer {
  url: string;
  /** Errors the server logged as INTERNAL (a client mistake must never produce one). */
  internalErrors: string[];
  dataDir: string;
  server: RunningServer;
  /** A request helper bound to this server (no token). */
  api: Api;
  close(): Promise<void>;
}

/** A fresh temporary directory; the returned function removes it. */
export async function tempDir(prefix = 'rivulet-e2e-'): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Which host the end-to-end tests run against: "node" (default) or "worker". */
export const TEST_HOST: 'node' | 'worker' = process.env.RIVULET_TEST_HOST === 'worker' ? 'worker' : 'node';

async function startWorkerTestServer(options: Omit<NodeServerOptions, 'port' | 'data'>): Promise<TestServer> {
  const { host: _host, ...rest } = options;
  const worker = await startWorkerHost(rest);
  return {
    get url() {
      return worker.url;
    },
    internalErrors: worker.internalErrors,
    dataDir: worker.dataDir,
    get server(): RunningServer {
      throw new Error('the Node host handle (TestServer.server) is not available when RIVULET_TEST_HOST=worker');
    },
    get api() {
      return worker.api;
    },
    close: () => worker.close(),
  };
}

export async function startTestServer(options: Omit<NodeServerOptions, 'port' | 'data'> = {}): Promise<TestServer> {
  if (TEST_HOST === 'worker') return startWorkerTestServer(options);
  const { dir, remove } = await tempDir();
  const internalErrors: string[] = [];
  let server: RunningServer;
  try {
    server = await startNodeServer({
      host: '127.0.0.1',
      // Client mistakes must never be INTERNAL: close() fails when one was logged.
      logger: {
        error(message, error) {
          internalErrors.push(`${message}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        },
      },
      ...options,
      port: 0,
      data: dir,
    });
  } catch (error) {
    await remove();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    internalErrors,
    dataDir: dir,
    server,
    api: new Api(server.url),
    close() {
      closing ??= server
        .close()
        .finally(remove)
        .then(() => {
          if (internalErrors.length > 0) {
            throw new Error(`the server answered INTERNAL ${internalErrors.length} time(s):\n${internalErrors.join('\n')}`);
          }
        });
      return closing;
    },
  };
}
