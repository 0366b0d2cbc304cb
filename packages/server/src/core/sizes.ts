/** Byte measures of JSON text (limits are in UTF-8 bytes, protocol §1.1, §3.3, §4.6). */

/**
 * Bytes encoded per step: a text longer than this in UTF-8 is measured in steps of at most this
 * many bytes into one reused buffer (exported for the tests of the step boundary).
 */
export const UTF8_STEP_BYTES = 65_536;

const encoder = new TextEncoder();
const scratch = new Uint8Array(UTF8_STEP_BYTES);

/**
 * UTF-8 bytes of a text, as the encoder writes them (a lone surrogate as the 3 bytes of U+FFFD).
 * The platform's encoder does the counting: `encodeInto` a reused buffer took 0.08–0.6× the time
 * of a JavaScript scan, on ASCII and on mixed text alike (docs/performance.md "UTF-8 length from
 * the platform's encoder"), and it exists on both hosts. It stops before a character that does not fit whole, so a longer text goes on
 * from where a step stopped.
 */
export function utf8Length(text: string): number {
  let bytes = 0;
  let rest = text;
  for (;;) {
    const { read, written } = encoder.encodeInto(rest, scratch);
    bytes += written;
    if (read >= rest.length) return bytes;
    rest = rest.slice(read);
  }
}
