/**
 * The page helpers every browser test file shares: one server and one Chromium per file (browser.ts
 * starts both), a fresh page per scenario whose console errors and uncaught errors fail the
 * scenario after it ran, and full-page screenshots under test-output/ui/.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { RivuletClient } from '@rivulet/client';
import type { RunningServer } from '@rivulet/server/node';
import { SHOTS, collectProblems, startUi, type Ui } from './browser.js';

export interface UiSuite {
  readonly ui: Ui;
  readonly server: RunningServer;
  readonly client: RivuletClient;
  /** The current scenario's page (closed after each scenario). */
  readonly page: Page;
  /** A new page whose problems are collected; it becomes `page`. */
  newPage(): Promise<Page>;
  /** A new page at `server.url/` plus `hash`. */
  open(hash?: string): Promise<Page>;
  /** Statuses of failed requests this scenario provokes on purpose (Chromium logs each as a console error). */
  expectStatuses(...statuses: number[]): void;
  shot(p: Page, name: string): Promise<Buffer>;
}

/** Registers the hooks of a browser test file (call it at the top level of the file) and returns its helpers. */
export function uiSuite(): UiSuite {
  let ui: Ui | undefined;
  let page: Page | undefined;
  let problems: string[] = [];
  let expectedStatuses: number[] = [];

  beforeAll(async () => {
    ui = await startUi();
  }, 30_000);

  afterAll(async () => {
    await ui?.close();
  });

  afterEach(async () => {
    await page?.close();
    page = undefined;
    expect(problems).toEqual([]);
  });

  const started = (): Ui => {
    if (!ui) throw new Error('the UI suite has not started (uiSuite() must be called at the top level of the test file)');
    return ui;
  };

  const suite: UiSuite = {
    get ui() {
      return started();
    },
    get server() {
      return started().server;
    },
    get client() {
      return started().client;
    },
    get page() {
      if (!page) throw new Error('no page is open in this scenario');
      return page;
    },
    async newPage() {
      page = await started().context.newPage();
      problems = [];
      expectedStatuses = [];
      collectProblems(page, problems, () => expectedStatuses);
      return page;
    },
    async open(hash = '') {
      const p = await suite.newPage();
      await p.goto(`${started().server.url}/${hash}`);
      return p;
    },
    expectStatuses(...statuses) {
      expectedStatuses = statuses;
    },
    shot: (p, name) => p.screenshot({ path: join(SHOTS, name), fullPage: true }),
  };
  return suite;
}
