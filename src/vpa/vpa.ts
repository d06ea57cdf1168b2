/**
 * The VPA grammar: `handle@provider`, handle 1-256 of `A-Z a-z 0-9 . _ -`,
 * provider 2-64 letters and digits starting with a letter. Matching is
 * case-insensitive everywhere, so keys are stored lower-cased; the grammar is
 * ASCII-only, so a lower-cased key's UTF-8 bytes are its char codes.
 */
export const MAX_HANDLE_LENGTH = 256;
export const MIN_PROVIDER_LENGTH = 2;
export const MAX_PROVIDER_LENGTH = 64;
export const MAX_VPA_LENGTH = MAX_HANDLE_LENGTH + 1 + MAX_PROVIDER_LENGTH;

// Character classes by char code, decided once: 1 handle char, 2 letter, 4 digit.
const HANDLE = 1;
const LETTER = 2;
const DIGIT = 4;
const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[A-Za-z]/.test(ch)) CLASS[c] = HANDLE | LETTER;
  else if (/[0-9]/.test(ch)) CLASS[c] = HANDLE | DIGIT;
  else if (ch === '.' || ch === '_' || ch === '-') CLASS[c] = HANDLE;
}

/** True when `value` is a syntactically valid VPA. Allocation-free. */
export function isValidVpa(value: string): boolean {
  const length = value.length;
  if (length < 4 || length > MAX_VPA_LENGTH) return false;
  const at = value.indexOf('@');
  if (at < 1 || at > MAX_HANDLE_LENGTH) return false;
  const providerLength = length - at - 1;
  if (providerLength < MIN_PROVIDER_LENGTH || providerLength > MAX_PROVIDER_LENGTH) return false;
  for (let i = 0; i < at; i++) {
    const c = value.charCodeAt(i);
    if (c > 127 || (CLASS[c]! & HANDLE) === 0) return false;
  }
  if (!isLetter(value.charCodeAt(at + 1))) return false;
  for (let i = at + 2; i < length; i++) {
    const c = value.charCodeAt(i);
    if (c > 127 || (CLASS[c]! & (LETTER | DIGIT)) === 0) return false;
  }
  return true;
}

function isLetter(c: number): boolean {
  return c < 128 && (CLASS[c]! & LETTER) !== 0;
}

/** The canonical (lower-cased) form of a valid VPA. */
export function normalizeVpa(value: string): string {
  return value.toLowerCase();
}

/** Why `value` is not a valid VPA, in words for an error message; null when it is valid. */
export function describeInvalidVpa(value: string): string | null {
  if (isValidVpa(value)) return null;
  const at = value.indexOf('@');
  if (at < 0) return 'must have the form handle@provider';
  if (value.indexOf('@', at + 1) >= 0) return 'must contain exactly one @';
  const handle = value.slice(0, at);
  const provider = value.slice(at + 1);
  if (handle.length === 0 || handle.length > MAX_HANDLE_LENGTH) return `handle must be 1 to ${MAX_HANDLE_LENGTH} characters`;
  if (!/^[A-Za-z0-9._-]+$/.test(handle)) return 'handle may contain only letters, digits, ".", "_" and "-"';
  if (provider.length < MIN_PROVIDER_LENGTH || provider.length > MAX_PROVIDER_LENGTH) {
    return `provider must be ${MIN_PROVIDER_LENGTH} to ${MAX_PROVIDER_LENGTH} characters`;
  }
  return 'provider must be letters and digits, starting with a letter';
}
