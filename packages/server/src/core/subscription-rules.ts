/**
 * Stateful rules of the subscription control events, judged before commit (protocol §9.2,
 * §9.3, §9.5, §9.8). Nothing is appended on rejection.
 * Schema shape was already checked at the edge (append-input.ts); this module checks meaning:
 * keys, JSONata, expressions, URLs, paths, bounds, and that commands name existing keys.
 */
import {
  EventType,
  GENERATED_KEY_PREFIX,
  Limits,
  RivuletError,
  canonicalizePath,
  type CoreState,
  type ItxExpression,
  type Receiver,
  type SubscriptionConfiguredPayload,
} from '@rivulet/contract';
import type { AppendInput } from './append-input.js';
import type { ExpressionLimits } from './expression-budget.js';
import { checkJsonata } from './jsonata.js';
import { isPrivateHost } from './private-address.js';
import { effectiveKey } from './reduce.js';

export interface ControlRulesContext {
  projectId: string | null;
  path: string;
  allowPrivateWebhooks: boolean;
  /** The expression budget, for refusing what exceeds it statically (protocol §16.8). */
  expressionLimits: ExpressionLimits;
  /** Whether a live connection currently holds this key on the stream (protocol §9.2). */
  isConnectionKey(key: string): boolean;
}

const RESERVED_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

/** Checks an ITX delivery expression (protocol §9.3, §18.3); answers nothing, throws INVALID_INPUT. */
export function checkItxExpression(expression: ItxExpression, field: string): void {
  expression.forEach((step, index) => {
    const name = typeof step === 'string' ? step : step[0];
    if (RESERVED_NAMES.has(name)) {
      throw new RivuletError('INVALID_INPUT', `${field}[${index}]: "${name}" is a reserved name and cannot be used in an ITX expression`);
    }
    if (typeof step !== 'string') {
      step.slice(1).forEach((arg, a) => {
        try {
          JSON.stringify(arg);
        } catch {
          throw new RivuletError('INVALID_INPUT', `${field}[${index}][${a + 1}]: call arguments must be JSON`);
        }
      });
    }
  });
  const last = expression[expression.length - 1];
  if (typeof last !== 'string') {
    throw new RivuletError(
      'INVALID_INPUT',
      `${field}: a delivery expression must end in the name of the method that receives the events, not in a call (step ${expression.length - 1})`,
    );
  }
}

/** Checks a webhook URL at configure time (protocol §9.3, §17.4); answers the normalised URL. */
export function checkWebhookUrl(raw: string, allowPrivate: boolean, field: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RivuletError('INVALID_INPUT', `${field}: "${raw}" is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RivuletError('INVALID_INPUT', `${field}: webhooks must use http or https, not ${url.protocol.replace(/:$/, '')}`);
  }
  if (!allowPrivate && isPrivateHost(url.hostname)) {
    throw new RivuletError(
      'INVALID_INPUT',
      `${field}: ${url.hostname} is a loopback, private, link-local or metadata address; this server does not send webhooks there (see --allow-private-webhooks)`,
    );
  }
  return url.toString();
}

function normalizeReceiver(receiver: Receiver, ctx: ControlRulesContext): Receiver {
  switch (receiver.action) {
    case 'copy-to-stream': {
      let receivingStreamPath: string;
      try {
        receivingStreamPath = canonicalizePath(receiver.receivingStreamPath);
      } catch (error) {
        if (!(error instanceof RivuletError)) throw error;
        throw new RivuletError(error.code, `receiver.receivingStreamPath: ${error.message}`, error.details);
      }
      if (receivingStreamPath === ctx.path) {
        throw new RivuletError('INVALID_INPUT', `a stream cannot receive from itself (${ctx.path})`);
      }
      if (receiver.jsonataTransform !== undefined) checkJsonata(receiver.jsonataTransform, 'receiver.jsonataTransform', ctx.expressionLimits);
      return { ...receiver, receivingStreamPath };
    }
    case 'itx-call':
      checkItxExpression(receiver.expression, 'receiver.expression');
      if (receiver.jsonataTransform !== undefined) checkJsonata(receiver.jsonataTransform, 'receiver.jsonataTransform', ctx.expressionLimits);
      return receiver;
    case 'processor-wake':
      checkItxExpression(receiver.expression, 'receiver.expression');
      return receiver;
    case 'webhook-post': {
      if (receiver.jsonataTransform !== undefined) checkJsonata(receiver.jsonataTransform, 'receiver.jsonataTransform', ctx.expressionLimits);
      return { ...receiver, url: checkWebhookUrl(receiver.url, ctx.allowPrivateWebhooks, 'receiver.url') };
    }
  }
}

/** Stateless: the normalised payload (canonical paths, URLs), refusing what can never be valid. */
function normalizeConfigured(payload: SubscriptionConfiguredPayload, ctx: ControlRulesContext): SubscriptionConfiguredPayload {
  if (payload.filter?.jsonataCondition !== undefined) checkJsonata(payload.filter.jsonataCondition, 'filter.jsonataCondition', ctx.expressionLimits);
  return { ...payload, receiver: normalizeReceiver(payload.receiver, ctx) };
}

/** Stateful: keys, live connections, and the per-pair bound, judged against the current state. */
function checkConfigured(payload: SubscriptionConfiguredPayload, state: CoreState, offset: number, ctx: ControlRulesContext): void {
  const byKey = state.subscriptions.outbound.byKey;
  const key = effectiveKey(payload, offset);
  if (payload.subscriptionKey !== undefined && key.startsWith(GENERATED_KEY_PREFIX)) {
    if (byKey[key]?.subscriptionKeyWasGenerated !== true) {
      throw new RivuletError(
        'INVALID_INPUT',
        `subscription keys starting "${GENERATED_KEY_PREFIX}" are reserved for generated keys; "${key}" is not an existing generated key`,
      );
    }
  }
  if (ctx.isConnectionKey(key)) {
    throw new RivuletError('CONFLICT', `subscription key "${key}" is held by a live connection on ${ctx.path}`);
  }
  const receiver = payload.receiver;
  if (receiver.action === 'copy-to-stream') {
    let pairs = 0;
    for (const [k, entry] of Object.entries(byKey)) {
      const r = entry.configuration.receiver;
      if (k !== key && r.action === 'copy-to-stream' && r.receivingStreamPath === receiver.receivingStreamPath) pairs++;
    }
    if (pairs >= Limits.subscriptionsPerPair) {
      throw new RivuletError(
        'LIMIT_EXCEEDED',
        `${ctx.path} already has ${pairs} subscriptions copying to ${receiver.receivingStreamPath}; the limit is ${Limits.subscriptionsPerPair} per source and receiving stream`,
        { limit: Limits.subscriptionsPerPair },
      );
    }
  }
}

function requireKey(state: CoreState, key: unknown, path: string): string {
  if (typeof key !== 'string' || !state.subscriptions.outbound.byKey[key]) {
    throw new RivuletError('NOT_FOUND', `no subscription "${String(key)}" on ${path}`, { subscriptionKey: key });
  }
  return key;
}

export interface ControlRules {
  /**
   * Stateless normalisation, applied before an idempotent repeat is compared, so that retrying
   * the very same request finds the stored (normalised) event (protocol §4.2).
   */
  normalize(input: AppendInput): AppendInput;
  /** Stateful rules against the state the event would be committed on. */
  check(input: AppendInput, state: CoreState, head: number): void;
}

export function createControlRules(ctx: ControlRulesContext): ControlRules {
  return {
    normalize(input) {
      if (input.source !== undefined || input.type !== EventType.subscriptionConfigured) return input;
      const payload = input.payload as unknown as SubscriptionConfiguredPayload;
      return { ...input, payload: normalizeConfigured(payload, ctx) as never };
    },
    check(input, state, head) {
      if (input.source !== undefined) return;
      const payload = (input.payload ?? {}) as Record<string, unknown>;
      switch (input.type) {
        case EventType.subscriptionConfigured:
          checkConfigured(payload as unknown as SubscriptionConfiguredPayload, state, head + 1, ctx);
          return;
        case EventType.subscriptionRemoved:
        case EventType.subscriptionDeliveryResumed:
        case EventType.subscriptionDeliveryHalted:
          requireKey(state, payload.subscriptionKey, ctx.path);
          return;
        case EventType.subscriptionCursorSet: {
          const key = requireKey(state, payload.subscriptionKey, ctx.path);
          const afterOffset = payload.afterOffset as number;
          if (state.subscriptions.outbound.byKey[key]!.configuration.receiver.action === 'processor-wake') {
            throw new RivuletError(
              'INVALID_INPUT',
              `subscription "${key}" wakes a hosted processor, which owns its checkpoint: its cursor cannot be set`,
            );
          }
          if (afterOffset > head) {
            throw new RivuletError(
              'INVALID_INPUT',
              `afterOffset ${afterOffset} is beyond this stream's current maximum offset ${head}`,
              { afterOffset, maxOffset: head },
            );
          }
          return;
        }
        default:
          return;
      }
    },
  };
}
