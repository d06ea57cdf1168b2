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

/**
 * Whether free text (a reason, a note, a dispute's details) can be kept
 * alike by every store: no control character but tab, line feed and
 * carriage return, and no lone surrogate. PostgreSQL refuses NUL in text,
 * and both in jsonb, where a file would keep them: the same request would
 * be stored by one mode and refused by the other.
 */
export function isStorableText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0x7f) return false;
  }
  return !hasLoneSurrogate(text);
}
