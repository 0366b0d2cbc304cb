/** Byte measures of JSON text (limits are in UTF-8 bytes, protocol §1.1, §3.3, §4.6). */

const NON_ASCII = /[^\x00-\x7f]/;

export function utf8Length(text: string): number {
  // Nearly all JSON is ASCII, one byte per code unit up to the first other one: the RegExp scan
  // finds it several times faster than the loop below walks the ASCII part.
  const first = text.search(NON_ASCII);
  if (first === -1) return text.length;
  let bytes = first;
  for (let i = first; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
