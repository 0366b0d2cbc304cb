/**
 * The webhook secret of a Node server (protocol §16.1, §17.5): `--webhook-secret` /
 * RIVULET_WEBHOOK_SECRET when given (validated, never written anywhere), else the one stored in
 * `<data>/webhook-secret`, generated on first start as `whsec_` + base64 of 32 random bytes and
 * written with mode 0600. Creation is exclusive (`wx`), so two starts racing on a new folder end
 * up with the same secret; the file is read back and validated on every start.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { webhookSecretKey, webhookSecretOf } from '../../core/webhook-signature.js';

export const WEBHOOK_SECRET_FILE = 'webhook-secret';
const GENERATED_KEY_BYTES = 32;

export function webhookSecretPath(dataDir: string): string {
  return join(dataDir, WEBHOOK_SECRET_FILE);
}

/** Throws an Error naming `where` when `secret` is not a valid `whsec_…` secret. */
export function checkWebhookSecret(secret: string, where: string): string {
  const trimmed = secret.trim();
  try {
    webhookSecretKey(trimmed);
  } catch (error) {
    throw new Error(`${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return trimmed;
}

/** The secret stored under `dataDir`, or undefined when there is none yet (never generates one). */
export function readStoredWebhookSecret(dataDir: string): string | undefined {
  const path = webhookSecretPath(dataDir);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return checkWebhookSecret(text, path);
}

/** The secret this server signs with: the given one, else the stored one, else a new stored one. */
export function loadWebhookSecret(dataDir: string, given: string | undefined): string {
  if (given !== undefined) return checkWebhookSecret(given, '--webhook-secret (RIVULET_WEBHOOK_SECRET)');
  const stored = readStoredWebhookSecret(dataDir);
  if (stored !== undefined) return stored;
  const secret = webhookSecretOf(randomBytes(GENERATED_KEY_BYTES));
  try {
    writeFileSync(webhookSecretPath(dataDir), `${secret}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readStoredWebhookSecret(dataDir)!;
  }
  return secret;
}
