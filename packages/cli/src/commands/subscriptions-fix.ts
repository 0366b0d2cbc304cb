/**
 * `rivulet subscriptions resume|set-cursor|rm|preview`: the commands that change or try one
 * subscription (protocol §9.4, §14.3–§14.5, §23). Each prints a line for people, or with --json
 * what the server answered.
 */
import { EventType, type PreviewSubscriptionBody } from '@rivulet/contract';
import { intOption, UsageError, type Command } from '../command.js';
import { connectionUsage, readInput, remoteCommand } from './remote.js';

function offsetArgument(name: string, text: string): number {
  if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text))) throw new UsageError(`${name} must be a non-negative whole number, got "${text}"`);
  return Number(text);
}

const resumeUsage = `Usage: rivulet subscriptions resume PATH KEY

Resumes halted subscription KEY of the source stream PATH: delivery restarts from its cursor with
a fresh retry ladder. Says so when it was not halted (nothing is appended then).

${connectionUsage}`;

const resume = remoteCommand(
  { name: 'resume', parent: 'subscriptions', summary: 'resume a halted subscription from its cursor', usage: resumeUsage, positionals: ['PATH', 'KEY'] },
  async ({ values, args: [path, key], io, client }) => {
    const answer = await client().resumeSubscription(path, { subscriptionKey: key });
    io.out(values.json ? JSON.stringify(answer) : answer.event ? `resumed ${key} on ${path} (offset ${answer.event.offset})` : `${key} on ${path} was not halted`);
    return 0;
  },
);

const setCursorUsage = `Usage: rivulet subscriptions set-cursor PATH KEY OFFSET [--resume]

Sets the cursor of subscription KEY of the source stream PATH to OFFSET (exclusive: delivery goes
on with the event after it) in a new run; with --resume it also resumes a halt, in one append.

Options:
  --resume         resume the subscription too, when it is halted

${connectionUsage}`;

const setCursor = remoteCommand(
  {
    name: 'set-cursor',
    parent: 'subscriptions',
    summary: 'move a subscription cursor (and resume it with --resume)',
    usage: setCursorUsage,
    positionals: ['PATH', 'KEY', 'OFFSET'],
    options: { resume: { type: 'boolean' } },
  },
  async ({ values, args: [path, key, offsetText], io, client }) => {
    const afterOffset = offsetArgument('OFFSET', offsetText);
    const body = { subscriptionKey: key, afterOffset };
    if (values.resume) {
      const answer = await client().setSubscriptionCursorAndResume(path, body);
      io.out(values.json ? JSON.stringify(answer) : `cursor of ${key} on ${path} set after ${afterOffset}${answer.resumed ? ', resumed' : ' (it was not halted)'}`);
    } else {
      const answer = await client().setSubscriptionCursor(path, body);
      io.out(values.json ? JSON.stringify(answer) : `cursor of ${key} on ${path} set after ${afterOffset}`);
    }
    return 0;
  },
);

const rmUsage = `Usage: rivulet subscriptions rm PATH KEY

Removes subscription KEY of the source stream PATH (appends subscription-removed there). Its
delivery progress and attempt history go with it.

${connectionUsage}`;

const rm = remoteCommand(
  { name: 'rm', parent: 'subscriptions', summary: 'remove a subscription', usage: rmUsage, positionals: ['PATH', 'KEY'] },
  async ({ values, args: [path, key], io, client }) => {
    const [event] = await client().append(path, { type: EventType.subscriptionRemoved, payload: { subscriptionKey: key, reason: 'requested' } });
    io.out(values.json ? JSON.stringify({ event }) : `removed ${key} from ${path} (offset ${event!.offset})`);
    return 0;
  },
);

const previewUsage = `Usage: rivulet subscriptions preview PATH --file CONFIG.json [--limit N] [--after-offset N]

Dry run: what the subscription-configured payload in CONFIG.json ("-" reads standard input) would
deliver from the recent history of the source stream PATH, shaped as its receiver would get it,
with the events its condition or transform fails on. Nothing is appended.

Options:
  --file F           the payload of a subscription-configured event (JSON)
  --limit N          durable events to look at, 1-1000 (default 100)
  --after-offset N   look after this offset (default: the last N events)

${connectionUsage}`;

const preview = remoteCommand(
  {
    name: 'preview',
    parent: 'subscriptions',
    summary: 'dry-run a subscription configuration against recent history',
    usage: previewUsage,
    positionals: ['PATH'],
    options: { file: { type: 'string' }, limit: { type: 'string' }, 'after-offset': { type: 'string' } },
  },
  async ({ values, args: [path], io, client }) => {
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
    const answer = await client().previewSubscription(path, body);
    if (values.json) {
      io.out(JSON.stringify(answer));
      return 0;
    }
    const lines = [`scanned ${answer.scanned}, matched ${answer.matched}: ${answer.deliveries.length} deliveries, ${answer.errors.length} errors`];
    for (const d of answer.deliveries) lines.push(`${d.offset}\t${JSON.stringify(d.event)}`);
    for (const e of answer.errors) lines.push(`${e.offset}\terror: ${e.error}`);
    io.out(lines.join('\n'));
    return 0;
  },
);

export const fixCommands: Command[] = [resume, setCursor, rm, preview];
