/**
 * The conformance suite of the storage port under vitest: the checks of storage-checks.ts with
 * vitest's describe/it/hooks/expect. Every Node adapter runs it (storage.test.ts); the Durable
 * Object adapter runs the same checks inside workerd (test/cloudflare/do-storage.test.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineStorageChecks, type StorageFactory } from './storage-checks.js';

export type { StorageFactory, StorageUnderTest } from './storage-checks.js';

export function describeStorageConformance(name: string, factory: StorageFactory): void {
  defineStorageChecks({ describe, it, beforeEach, afterEach, expect }, name, factory);
}
