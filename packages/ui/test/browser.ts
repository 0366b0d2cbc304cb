/**
 * The browser and server of the web UI's browser tests (test/ui*.test.ts): Debian's Chromium driven
 * by playwright-core, against a real server started in-process on a fresh data folder that serves
 * the built UI (packages/ui/dist, built by `npm run build`, which `npm test` runs first), and the
 * collection of a page's console errors and uncaught errors. Screenshots land in test-output/ui/ at
 * the repository root (git-ignored).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { createClient, type RivuletClient } from '@rivulet/client';
import { startNodeServer, type RunningServer } from '@rivulet/server/node';

// No trailing slash: the server's asset handler appends its own separator.
export const UI_DIR = fileURLToPath(new URL('../dist', import.meta.url));
export const SHOTS = fileURLToPath(new URL('../../../test-output/ui/', import.meta.url));
const CHROMIUM = process.env.RIVULET_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

export interface Ui {
  server: RunningServer;
  client: RivuletClient;
  context: BrowserContext;
  /** The browser first, so no page is left reconnecting to a stopped server; then the server and both folders. */
  close(): Promise<void>;
}

/** Starts the server and Chromium (for a beforeAll); fails with how to fix a missing build or browser. */
export async function startUi(): Promise<Ui> {
  if (!existsSync(join(UI_DIR, 'index.html'))) {
    throw new Error(`the built UI is missing (${join(UI_DIR, "index.html")}): run \`npm run build\` first (npm test does)`);
  }
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is missing at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (.ci/run does)`);
  }
  mkdirSync(SHOTS, { recursive: true });
  const data = mkdtempSync(join(tmpdir(), 'rivulet-ui-test-'));
  const profile = mkdtempSync(join(tmpdir(), 'rivulet-ui-chromium-'));
  let server: RunningServer | undefined;
  let context: BrowserContext | undefined;
  const close = async () => {
    await context?.close();
    await server?.close();
    rmSync(data, { recursive: true, force: true });
    rmSync(profile, { recursive: true, force: true });
  };
  try {
    server = await startNodeServer({
      port: 0,
      data,
      uiDir: UI_DIR,
      retryBaseMs: 10,
      retryMaxMs: 50,
      maxDeliveryAttempts: 3,
      logger: { error: () => undefined },
    });
    const client = createClient({ url: server.url });
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1440, height: 900 },
    });
    context.setDefaultTimeout(10_000);
    return { server, client, context, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Collects the page's console errors and uncaught errors into `problems` (checked after each test),
 * except the failed requests of the statuses `expectedStatuses()` answers: Chromium logs every
 * non-2xx fetch as a console error.
 */
export function collectProblems(page: Page, problems: string[], expectedStatuses: () => number[]): void {
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const failed = /^Failed to load resource: the server responded with a status of (\d+)/.exec(message.text());
    if (failed && expectedStatuses().includes(Number(failed[1]))) return;
    problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
}
