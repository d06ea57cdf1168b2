/**
 * Whether `text` holds a control character (U+0000 to U+001F, or U+007F):
 * none belongs in an id, a url, a reference or a cursor, and they would
 * corrupt logs, tables and header lines.
 */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}
