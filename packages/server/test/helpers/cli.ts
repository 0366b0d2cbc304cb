/**
 * The built CLI as a child process (`node packages/cli/bin/rivulet.js serve …`), or the built Node
 * host with test options (`spawnNodeHost`), for tests that must kill a real server process. The suite runs after `npm run build`; a missing build fails
 * with a message saying so instead of a confusing spawn error.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const BIN = `${ROOT}packages/cli/bin/rivulet.js`;
const BUILT = [`${ROOT}packages/cli/dist/main.js`, `${ROOT}packages/server/dist/hosts/node/serve.js`, `${ROOT}packages/contract/dist/index.js`];

export interface CliServer {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote so far. */
  output(): string;
  /** Resolves when the process has exited (and was reaped). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function assertBuilt(): void {
  const missing = BUILT.filter((file) => !existsSync(file));
  if (missing.length > 0) {
    throw new Error(
      `the built CLI is missing (${missing.join(', ')}): this test spawns packages/cli/bin/rivulet.js; run \`npm run build\` first`,
    );
  }
}

/**
 * Starts `rivulet serve --port 0 …args` and waits for its "rivulet listening on URL" line;
 * `nodeArgs` go to node before the CLI (V8 flags, say); `env` adds variables to its environment.
 */
export async function spawnServe(args: readonly string[], timeoutMs = 15_000, nodeArgs: readonly string[] = [], env: Record<string, string> = {}): Promise<CliServer> {
  return spawnListening([...nodeArgs, BIN, 'serve', '--port', '0', ...args], timeoutMs, env);
}

/**
 * Starts the built Node host in a child process with options the CLI has no flags for (engine
 * limits such as ephemeral retention), through test/fixtures/node-host.mjs.
 */
export async function spawnNodeHost(data: string, options: Record<string, unknown>, timeoutMs = 15_000): Promise<CliServer> {
  return spawnListening([`${ROOT}packages/server/test/fixtures/node-host.mjs`, data, JSON.stringify(options)], timeoutMs);
}

async function spawnListening(argv: readonly string[], timeoutMs: number, extraEnv: Record<string, string> = {}): Promise<CliServer> {
  assertBuilt();
  // The flags given here must decide; no RIVULET_* variable of the caller may leak in.
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('RIVULET_'))), ...extraEnv };
  const child = spawn(process.execPath, argv, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${argv.join(' ')} did not print "rivulet listening on" within ${timeoutMs} ms; output:\n${output}`));
    }, timeoutMs);
    const onData = (s: string) => {
      output += s;
      const match = /rivulet listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    // Decoded as a stream: a character whose UTF-8 bytes a pipe splits between two chunks stays whole.
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${argv.join(' ')} exited (code ${code}, signal ${signal}) before listening; output:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    exited,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
