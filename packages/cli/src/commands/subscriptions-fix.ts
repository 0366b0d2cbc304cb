/**
 * `rivulet subscriptions resume|set-cursor|rm|preview`: the commands that change or try one
 * subscription (protocol §9.4, §14.3–§14.5, §23). Each prints a line for people, or with --json
 * what the server answered.
 */
import { EventType, type PreviewSubscriptionBody } from '@rivulet/contract';
import { intOption, parse, UsageError, type Command } from '../command.js';
import { clientFrom, connectionOptions, connectionUsage, expectPositionals, readInput, reportErrors, type RemoteIO } from './remote.js';

function offsetArgument(name: string, text: string): number {
  if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text))) throw new UsageError(`${name} must be a non-negative whole number, got "${text}"`);
  return Number(text);
}

const resumeUsage = `Usage: rivulet subscriptions resume PATH KEY

Resumes halted subscription KEY of the source stream PATH: delivery restarts from its cursor with
a fresh retry ladder. Says so when it was not halted (nothing is appended then).

${connectionUsage}`;

const resume: Command = {
  name: 'resume',
  summary: 'resume a halted subscription from its cursor',
  usage: resumeUsage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, connectionOptions);
    if (values.help) {
      io.out(resumeUsage);
      return 0;
    }
    const [path, key] = expectPositionals(positionals, ['PATH', 'KEY']) as [string, string];
    const client = clientFrom(values, io.env);
    return reportErrors('subscriptions resume', io, async () => {
      const answer = await client.resumeSubscription(path, { subscriptionKey: key });
      io.out(values.json ? JSON.stringify(answer) : answer.event ? `resumed ${key} on ${path} (offset ${answer.event.offset})` : `${key} on ${path} was not halted`);
      return 0;
    });
  },
};

const setCursorUsage = `Usage: rivulet subscriptions set-cursor PATH KEY OFFSET [--resume]

Sets the cursor of subscription KEY of the source stream PATH to OFFSET (exclusive: delivery goes
on with the event after it) in a new run; with --resume it also resumes a halt, in one append.

Options:
  --resume         resume the subscription too, when it is halted

${connectionUsage}`;

const setCursor: Command = {
  name: 'set-cursor',
  summary: 'move a subscription cursor (and resume it with --resume)',
  usage: setCursorUsage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, { ...connectionOptions, resume: { type: 'boolean' } });
    if (values.help) {
      io.out(setCursorUsage);
      return 0;
    }
    const [path, key, offsetText] = expectPositionals(positionals, ['PATH', 'KEY', 'OFFSET']) as [string, string, string];
    const afterOffset = offsetArgument('OFFSET', offsetText);
    const client = clientFrom(values, io.env);
    return reportErrors('subscriptions set-cursor', io, async () => {
      const body = { subscriptionKey: key, afterOffset };
      if (values.resume) {
        const answer = await client.setSubscriptionCursorAndResume(path, body);
        io.out(values.json ? JSON.stringify(answer) : `cursor of ${key} on ${path} set after ${afterOffset}${answer.resumed ? ', resumed' : ' (it was not halted)'}`);
      } else {
        const answer = await client.setSubscriptionCursor(path, body);
        io.out(values.json ? JSON.stringify(answer) : `cursor of ${key} on ${path} set after ${afterOffset}`);
      }
      return 0;
    });
  },
};

const rmUsage = `Usage: rivulet subscriptions rm PATH KEY

Removes subscription KEY of the source stream PATH (appends subscription-removed there). Its
delivery progress and attempt history go with it.

${connectionUsage}`;

const rm: Command = {
  name: 'rm',
  summary: 'remove a subscription',
  usage: rmUsage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, connectionOptions);
    if (values.help) {
      io.out(rmUsage);
      return 0;
    }
    const [path, key] = expectPositionals(positionals, ['PATH', 'KEY']) as [string, string];
    const client = clientFrom(values, io.env);
    return reportErrors('subscriptions rm', io, async () => {
      const [event] = await client.append(path, { type: EventType.subscriptionRemoved, payload: { subscriptionKey: key, reason: 'requested' } });
      io.out(values.json ? JSON.stringify({ event }) : `removed ${key} from ${path} (offset ${event!.offset})`);
      return 0;
    });
  },
};

const previewUsage = `Usage: rivulet subscriptions preview PATH --file CONFIG.json [--limit N] [--after-offset N]

Dry run: what the subscription-configured payload in CONFIG.json ("-" reads standard input) would
deliver from the recent history of the source stream PATH, shaped as its receiver would get it,
with the events its condition or transform fails on. Nothing is appended.

Options:
  --file F           the payload of a subscription-configured event (JSON)
  --limit N          durable events to look at, 1-1000 (default 100)
  --after-offset N   look after this offset (default: the last N events)

${connectionUsage}`;

const preview: Command = {
  name: 'preview',
  summary: 'dry-run a subscription configuration against recent history',
  usage: previewUsage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, { ...connectionOptions, file: { type: 'string' }, limit: { type: 'string' }, 'after-offset': { type: 'string' } });
    if (values.help) {
      io.out(previewUsage);
      return 0;
    }
    const [path] = expectPositionals(positionals, ['PATH']) as [string];
    if (values.file === undefined) throw new UsageError('missing --file CONFIG.json');
    const text = await readInput(values.file, io);
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`${values.file} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new UsageError(`${values.file} must hold a JSON object (a subscription-configured payload)`);
    const body = { ...(payload as Record<string, unknown>) } as PreviewSubscriptionBody;
    if (values.limit !== undefined) body.limit = intOption('--limit', values.limit, 100, 1);
    if (values['after-offset'] !== undefined) body.afterOffset = intOption('--after-offset', values['after-offset'], 0, 0);
    const client = clientFrom(values, io.env);
    return reportErrors('subscriptions preview', io, async () => {
      const answer = await client.previewSubscription(path, body);
      if (values.json) {
        io.out(JSON.stringify(answer));
        return 0;
      }
      const lines = [`scanned ${answer.scanned}, matched ${answer.matched}: ${answer.deliveries.length} deliveries, ${answer.errors.length} errors`];
      for (const d of answer.deliveries) lines.push(`${d.offset}\t${JSON.stringify(d.event)}`);
      for (const e of answer.errors) lines.push(`${e.offset}\terror: ${e.error}`);
      io.out(lines.join('\n'));
      return 0;
    });
  },
};

export const fixCommands: Command[] = [resume, setCursor, rm, preview];
