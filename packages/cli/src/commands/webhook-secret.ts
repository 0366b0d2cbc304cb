/**
 * `rivulet webhook-secret`: print the secret webhooks are signed with (protocol §17.5), so a
 * receiver can verify them. It reads what `rivulet serve` would use with the same environment —
 * RIVULET_WEBHOOK_SECRET when set, else DATA/webhook-secret — and never creates one: a folder no
 * server has started on yet has no secret, which is said plainly (exit 1).
 */
import { Defaults } from '@rivulet/contract';
import { resolve } from 'node:path';
import { parse, UsageError, type Command } from '../command.js';

const usage = `Usage: rivulet webhook-secret [--data DIR]

Prints the webhook secret (whsec_<base64 key>) the server signs webhook requests with; receivers
verify the webhook-signature header with it (Standard Webhooks; the SDK's verifyWebhook).
The server generates it on its first start and keeps it in DIR/webhook-secret; a secret given to
rivulet serve with --webhook-secret or RIVULET_WEBHOOK_SECRET is used instead and is not stored.

Options:
  --data DIR       data folder (RIVULET_DATA, default ${Defaults.data})
  -h, --help       show this help`;

export const webhookSecretCommand: Command = {
  name: 'webhook-secret',
  summary: 'print the secret webhooks are signed with',
  usage,
  async run(argv, io) {
    const { values, positionals } = parse(argv, { data: { type: 'string' } }, false);
    if (values.help) {
      io.out(usage);
      return 0;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const { readStoredWebhookSecret, checkWebhookSecret } = await import('@rivulet/server/node');
    const given = io.env.RIVULET_WEBHOOK_SECRET;
    if (given) {
      io.out(checkWebhookSecret(given, 'RIVULET_WEBHOOK_SECRET'));
      return 0;
    }
    const dir = resolve(values.data ?? io.env.RIVULET_DATA ?? Defaults.data);
    const secret = readStoredWebhookSecret(dir);
    if (secret === undefined) {
      io.err(
        `rivulet webhook-secret: no webhook secret in ${dir} yet: rivulet serve generates one on its first start ` +
          'with that data folder (or pass --webhook-secret to rivulet serve)',
      );
      return 1;
    }
    io.out(secret);
    return 0;
  },
};
