/**
 * The VPA grammar, checked here for the calls that send a hash of the VPA
 * rather than the VPA (verifyPrivately, the mirror): the service cannot
 * refuse what it never sees, and a string outside the grammar hashes to a
 * name no flagged VPA has, so it would read as CLEARED. The grammar is the
 * service's (src/vpa/vpa.ts): handle 1-256 of `A-Z a-z 0-9 . _ -`, `@`,
 * provider 2-64 letters and digits starting with a letter.
 */
import { BadRequestError } from './errors.js';

const VPA_GRAMMAR = /^[A-Za-z0-9._-]{1,256}@[A-Za-z][A-Za-z0-9]{1,63}$/;

/**
 * `upi`, checked: a TypeError when it is not a non-empty string (as every
 * call's arguments), a BadRequestError when it is outside the grammar (what
 * the service answers `verify` with for it).
 */
export function checkedVpa(upi: unknown): string {
  if (typeof upi !== 'string' || upi === '') throw new TypeError(`upi must be a non-empty string, got ${JSON.stringify(upi)}`);
  if (!VPA_GRAMMAR.test(upi)) {
    throw new BadRequestError(`upi ${JSON.stringify(upi)} is not a VPA: handle@provider, a handle of letters, digits, ".", "_" and "-", a provider of letters and digits starting with a letter`);
  }
  return upi;
}
