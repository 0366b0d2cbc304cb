/**
 * Answers of the Durable Streams routes: a plain-text refusal with its status (the protocol's
 * clients read the status, not the body), or an empty answer with the protocol's header fields.
 *
 * An append decides a plain `DsAnswer`, which the Node host's fast entrances write as it is
 * (routes.ts `answerAppend`); every other answer, and an append the app answers, is a `Response`.
 */
export type Fields = Record<string, string>;

export const TEXT_TYPE = 'text/plain; charset=utf-8';

export interface DsAnswer {
  readonly status: number;
  /** Its header fields, `content-type` among them when it has a body. */
  readonly fields: Fields;
  /** The body, or null for none. */
  readonly text: string | null;
}

export const refusal = (status: number, message: string, fields: Fields = {}): DsAnswer => ({
  status,
  fields: { 'content-type': TEXT_TYPE, ...fields },
  text: message,
});

export const emptyAnswer = (status: number, fields: Fields): DsAnswer => ({ status, fields, text: null });

export const toResponse = (answer: DsAnswer): Response => new Response(answer.text, { status: answer.status, headers: answer.fields });

export const refuse = (status: number, message: string, fields: Fields = {}): Response => toResponse(refusal(status, message, fields));

export const empty = (status: number, fields: Fields): Response => toResponse(emptyAnswer(status, fields));

export const notFoundAnswer = (): DsAnswer => refusal(404, 'stream not found');
export const notFound = (): Response => toResponse(notFoundAnswer());

/** A stream deleted while forks still read it (docs/durable-streams.md "Forks"). */
export const goneAnswer = (): DsAnswer => refusal(410, 'the stream was deleted; only its forks still read it');
export const gone = (): Response => toResponse(goneAnswer());
