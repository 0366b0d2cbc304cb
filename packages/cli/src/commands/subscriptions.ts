/**
 * `rivulet subscriptions ls|show|resume|set-cursor|rm|preview`: find, inspect and fix the
 * subscriptions of the caller's project (protocol §14, §21–§23). `ls` and `show` are here; the
 * commands that change or try a subscription are in subscriptions-fix.ts.
 */
import { SUBSCRIPTION_STATUSES, type SubscriptionListEntry, type SubscriptionStatus } from '@rivulet/contract';
import { intOption, UsageError, type Command, type CommandIO } from '../command.js';
import { table } from './format.js';
import { connectionUsage, remoteCommand } from './remote.js';
import { fixCommands } from './subscriptions-fix.js';

const lsUsage = `Usage: rivulet subscriptions ls [--status LIST] [--prefix P] [--limit N]

Lists the subscriptions of the caller's project across its streams, halted ones first, then by
source path and key: status, source, key, action, target, lag, attempt and the last error.
--json prints {"subscriptions": [...]} with every field the server answers.

Statuses: halted (a halt stands; resume it), retrying (the last attempt failed), lagging (it owes
an event appended more than the server's lagging threshold ago), healthy.

Options:
  --status LIST    only these statuses, a comma list of ${SUBSCRIPTION_STATUSES.join(', ')}
  --prefix P       only subscriptions of streams at or below this path
  --limit N        at most N subscriptions (default: all)

${connectionUsage}`;

function statusOption(value: string | undefined): SubscriptionStatus[] | undefined {
  if (value === undefined) return undefined;
  const list = value.split(',').map((s) => s.trim());
  for (const s of list) {
    if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(s)) throw new UsageError(`--status: "${s}" is not one of ${SUBSCRIPTION_STATUSES.join(', ')}`);
  }
  return list as SubscriptionStatus[];
}

const cutText = (text: string | null, n: number) => (text === null ? '' : text.length > n ? `${text.slice(0, n - 1)}…` : text);

const ls = remoteCommand(
  {
    name: 'ls',
    parent: 'subscriptions',
    summary: 'list subscriptions across streams (halted first)',
    usage: lsUsage,
    positionals: [],
    options: { status: { type: 'string' }, prefix: { type: 'string' }, limit: { type: 'string' } },
  },
  async ({ values, io, client }) => {
    const status = statusOption(values.status);
    const limit = values.limit === undefined ? Number.POSITIVE_INFINITY : intOption('--limit', values.limit, 0, 1);
    const found: SubscriptionListEntry[] = [];
    for await (const entry of client().listAllSubscriptions({ status, prefix: values.prefix, limit: Math.min(1000, limit) })) {
      found.push(entry);
      if (found.length >= limit) break;
    }
    if (values.json) io.out(JSON.stringify({ subscriptions: found }));
    else if (found.length === 0) io.err('no subscriptions');
    else {
      const rows = found.map((s) => [s.status, s.sourcePath, s.subscriptionKey, s.action, cutText(s.target, 40), String(s.lag), String(s.attempt), cutText(s.lastError, 60)]);
      io.out(table(['STATUS', 'SOURCE', 'KEY', 'ACTION', 'TARGET', 'LAG', 'ATTEMPT', 'LAST ERROR'], rows));
    }
    return 0;
  },
);

const showUsage = `Usage: rivulet subscriptions show PATH KEY [--attempts N]

Shows subscription KEY of the source stream PATH: its configuration, its progress, its halt, and
its last delivery attempts, newest first. --json prints {"entry", "runtime", "attempts"}.

Options:
  --attempts N     how many attempts to show (default 10, at most 1000)

${connectionUsage}`;

const show = remoteCommand(
  {
    name: 'show',
    parent: 'subscriptions',
    summary: 'show one subscription: configuration, progress, halt, last attempts',
    usage: showUsage,
    positionals: ['PATH', 'KEY'],
    options: { attempts: { type: 'string' } },
  },
  async ({ values, args: [path, key], io, client: connect }) => {
    const limit = intOption('--attempts', values.attempts, 10, 1);
    const client = connect();
    // The attempts answer NOT_FOUND for a key that does not exist: asked first, it is the error shown.
    const { attempts } = await client.deliveryAttempts(path, key, { limit });
    const state = await client.state(path);
    const entry = state.core?.subscriptions.outbound.byKey[key] ?? null;
    const runtime = state.runtime?.subscriptions[key] ?? null;
    if (values.json) {
      io.out(JSON.stringify({ entry, runtime, attempts }));
      return 0;
    }
    const lines = [
      `subscription  ${key} on ${path}`,
      `configured    ${entry?.configuredAt ?? '-'} (offset ${entry?.configuredAtOffset ?? '-'})`,
      `configuration ${JSON.stringify(entry?.configuration ?? null)}`,
      `progress      acknowledged ${runtime?.acknowledgedOffset ?? '-'}, lag ${runtime?.lag ?? '-'}, attempt ${runtime?.attempt ?? 0}`,
      `last error    ${runtime?.lastError ?? 'none'}`,
      `halted        ${entry?.deliveryHalted ? `after offset ${entry.deliveryHalted.afterOffset}, ${entry.deliveryHalted.attempts} attempts: ${entry.deliveryHalted.error ?? ''}` : 'no'}`,
    ];
    if (attempts.length === 0) lines.push('attempts      none');
    else {
      lines.push('attempts', '');
      lines.push(
        table(
          ['AT', 'RUN', 'ATTEMPT', 'OFFSETS', 'OUTCOME', 'STATUS', 'MS', 'ERROR'],
          attempts.map((a) => [a.at, a.run, String(a.attempt), `${a.fromOffset}-${a.toOffset}`, a.outcome, a.status === undefined ? '' : String(a.status), String(a.durationMs), cutText(a.error ?? '', 60)]),
        ),
      );
    }
    io.out(lines.join('\n'));
    return 0;
  },
);

const subcommands: Command[] = [ls, show, ...fixCommands];

function help(): string {
  const width = Math.max(...subcommands.map((c) => c.name.length));
  return [
    'Usage: rivulet subscriptions <command> [options]',
    '',
    'Commands:',
    ...subcommands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run "rivulet subscriptions <command> --help" for the options of one command.',
  ].join('\n');
}

export const subscriptionsCommand: Command = {
  name: 'subscriptions',
  summary: 'find, inspect and fix subscriptions (ls, show, resume, set-cursor, rm, preview)',
  usage: help(),
  async run(argv, io: CommandIO) {
    const [name, ...rest] = argv;
    if (name === '--help' || name === '-h' || name === 'help') {
      io.out(help());
      return 0;
    }
    if (name === undefined) throw new UsageError('missing the subscriptions command');
    const command = subcommands.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown subscriptions command "${name}"`);
    try {
      return await command.run(rest, io);
    } catch (error) {
      if (error instanceof UsageError) {
        io.err(`rivulet subscriptions ${command.name}: ${error.message}\n\n${command.usage}`);
        return 2;
      }
      throw error;
    }
  },
};
