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

/**
 * Whether `text` holds half of a UTF-16 surrogate pair alone (JSON's
 * `"\ud800"`): no UTF-8 can write it, so a store would keep U+FFFD in its
 * place, and two different ids would become one.
 */
export function hasLoneSurrogate(text: string): boolean {
  // String.prototype.isWellFormed (Node 20), which this project's TypeScript lib does not declare yet.
  return !(text as unknown as { isWellFormed(): boolean }).isWellFormed();
}
