/**
 * Output for people (the --json paths print the SDK's documents unchanged). Event lines are
 * `offset  time  type  payload`, then only the fields that are present, so that a line of a
 * plain event stays short and grep-able; tables pad columns to their widest cell.
 */
import type { CommittedEvent, StreamStateResponse } from '@rivulet/client';

export function eventLine(event: CommittedEvent, offsetWidth = 0): string {
  const parts = [String(event.offset).padStart(offsetWidth), event.createdAt, event.type];
  parts.push(event.payload === undefined ? '{}' : JSON.stringify(event.payload));
  if (event.metadata !== undefined) parts.push(`metadata=${JSON.stringify(event.metadata)}`);
  if (event.idempotencyKey !== undefined) parts.push(`key=${JSON.stringify(event.idempotencyKey)}`);
  if (event.ephemeral) parts.push('(ephemeral)');
  const hop = event.source?.copiedFrom.at(-1);
  if (hop) parts.push(`(copied from ${hop.path}@${hop.offset})`);
  return parts.join('  ');
}

export function eventLines(events: readonly CommittedEvent[]): string[] {
  const width = Math.max(0, ...events.map((e) => String(e.offset).length));
  return events.map((e) => eventLine(e, width));
}

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

function receiverTarget(receiver: { action: string; [key: string]: unknown }): string {
  if (typeof receiver.receivingStreamPath === 'string') return receiver.receivingStreamPath;
  if (typeof receiver.url === 'string') return receiver.url;
  if (Array.isArray(receiver.expression)) return JSON.stringify(receiver.expression);
  return '';
}

export function stateText(path: string, state: StreamStateResponse): string {
  const { core, runtime } = state;
  if (core === null) return `stream ${path} does not exist`;
  const lines = [
    `path           ${core.path}`,
    `project        ${core.projectId ?? '(deployment-wide)'}`,
    `stream id      ${core.streamId}`,
    `created        ${core.createdAt}`,
    `head offset    ${runtime?.streamMaxOffset ?? core.maxOffset}`,
    `durable events ${core.eventCount} (last at offset ${core.maxOffset})`,
    `paused         ${core.paused ? `yes${core.pauseReason ? ` (${core.pauseReason})` : ''}` : 'no'}`,
  ];
  const outbound = Object.entries(core.subscriptions.outbound.byKey);
  if (outbound.length === 0) lines.push('subscriptions  none');
  else {
    lines.push('subscriptions', '');
    const rows = outbound.map(([key, entry]) => {
      const progress = runtime?.subscriptions[key];
      const status = entry.deliveryHalted ? `halted: ${entry.deliveryHalted.error ?? entry.deliveryHalted.reason}` : (progress?.lastError ?? 'ok');
      return [
        key,
        entry.configuration.receiver.action,
        receiverTarget(entry.configuration.receiver),
        String(progress?.acknowledgedOffset ?? ''),
        String(progress?.lag ?? ''),
        status,
      ];
    });
    lines.push(indent(table(['KEY', 'ACTION', 'TARGET', 'ACKED', 'LAG', 'STATUS'], rows)), '');
  }
  const inbound = Object.entries(core.subscriptions.inbound.bySourcePath).flatMap(([source, byKey]) =>
    Object.entries(byKey).map(([key, record]) => [source, key, String(record.numEventsReceived), record.lastEventReceivedAt ?? '']),
  );
  if (inbound.length === 0) lines.push('inbound        none');
  else lines.push('inbound', '', indent(table(['SOURCE', 'KEY', 'RECEIVED', 'LAST AT'], inbound)), '');
  const connections = Object.entries(runtime?.connections ?? {});
  if (connections.length === 0) lines.push('connections    none');
  else {
    const rows = connections.map(([key, c]) => [key, c.kind, c.startedAt, String(c.deliveredThroughOffset), String(c.lag)]);
    lines.push('connections', '', indent(table(['KEY', 'KIND', 'STARTED', 'DELIVERED', 'LAG'], rows)));
  }
  return lines.join('\n').trimEnd();
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}
