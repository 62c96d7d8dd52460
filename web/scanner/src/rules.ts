/**
 * What the door decides alone, when the server cannot be asked: pure, so Node tests it too. The
 * server stays the judge: every scan is uploaded and its answer replaces this one.
 */
import { MAX_CODE_CHARS } from '../../../src/events/ticket-code-format.js';
import type { LocalRefusal, Verdict } from './verify.js';

export type Direction = 'entry' | 'exit';

/** The check-in list the scanner is paired with, as GET /checkin/offline lists it. */
export interface CheckinList {
  object: 'checkin_list';
  id: string;
  eventId: string;
  name: string;
  /** Empty: every ticket type. */
  ticketTypeIds: string[];
  validFrom: string | null;
  validUntil: string | null;
  allowMultipleEntries: boolean;
  scanExits: boolean;
  counts: { inside: number; entries: number; exits: number; admittedTickets: number; conflicts: number };
  createdAt: string;
  updatedAt: string;
}

/** Refusal codes the door gives itself: the verifier's, and the list's (the server's names for the same rules). */
export type Refusal = LocalRefusal | 'wrong_list' | 'list_expired' | 'already_inside' | 'already_checked_in' | 'not_inside' | 'exits_not_scanned' | 'needs_server';

/** One earlier admitted scan of the same ticket on this device and list, oldest first. */
export interface Admission {
  direction: Direction;
  scannedAt: string;
}

export type Decision = { result: 'admitted' } | { result: 'refused'; reason: Refusal };

/**
 * Admit when the code verified, its type is on the list, the list is open at `now`, and this
 * device has not admitted the ticket already (unless the list allows it). An exit needs a list
 * that scans exits, and is refused only when this device saw the ticket leave last; an entry made
 * at another door is unknown here, so the exit is let through and the server settles it.
 */
export function decide(verdict: Verdict, list: CheckinList | null, earlier: readonly Admission[], direction: Direction, now: Date): Decision {
  if (!verdict.ok) return { result: 'refused', reason: verdict.reason };
  const { ticket } = verdict;
  const last = earlier.at(-1);
  if (!list) {
    if (direction === 'exit') return { result: 'refused', reason: 'exits_not_scanned' };
    return earlier.length > 0 ? { result: 'refused', reason: 'already_checked_in' } : { result: 'admitted' };
  }
  if (list.ticketTypeIds.length > 0 && !list.ticketTypeIds.includes(ticket.ticketTypeId)) return { result: 'refused', reason: 'wrong_list' };
  if (list.validFrom && now.getTime() < Date.parse(list.validFrom)) return { result: 'refused', reason: 'not_yet_valid' };
  if (list.validUntil && now.getTime() > Date.parse(list.validUntil)) return { result: 'refused', reason: 'list_expired' };
  if (direction === 'exit') {
    if (!list.scanExits) return { result: 'refused', reason: 'exits_not_scanned' };
    return last?.direction === 'exit' ? { result: 'refused', reason: 'not_inside' } : { result: 'admitted' };
  }
  if (list.scanExits && last?.direction === 'entry') return { result: 'refused', reason: 'already_inside' };
  if (!list.allowMultipleEntries && earlier.some((a) => a.direction === 'entry')) return { result: 'refused', reason: 'already_inside' };
  return { result: 'admitted' };
}

/** Why `text` is no code at all (longer than the server takes as a code), as the door shows it; null when it may be one. Looks at the length only, so a megabyte costs nothing. */
export function notACode(text: string): string | null {
  return text.length > MAX_CODE_CHARS ? `Not a ticket code: the scanned text has ${text.length.toLocaleString('en')} characters, a ticket code at most ${MAX_CODE_CHARS}.` : null;
}

/** What the door shows for a refusal code, its own or the server's. */
export const REFUSALS: Record<string, string> = {
  invalid_code: 'Not a valid ticket code',
  key_retired: 'Code signed with a retired key',
  wrong_event: 'Ticket for another event',
  not_yet_valid: 'Not valid yet',
  code_not_yet_valid: 'Code not valid yet',
  code_expired: 'Code no longer valid',
  ticket_revoked: 'Ticket revoked (cancelled or replaced)',
  ticket_cancelled: 'Ticket cancelled',
  wrong_list: 'Not valid at this door',
  list_expired: 'This door is closed',
  already_inside: 'Already inside',
  already_checked_in: 'Already checked in',
  not_inside: 'Not inside',
  exits_not_scanned: 'This door does not scan exits',
  needs_server: 'Needs the network to check this code',
  not_found: 'Unknown ticket',
  conflict: 'Admitted earlier at another door',
  // The server's answer to an uploaded scan that is malformed by itself (too long a code, a bad time).
  invalid_scan: 'Not a scan the server could take',
};

export const refusalText = (code: string | undefined) => (code && REFUSALS[code]) || (code ? code.replaceAll('_', ' ') : 'Refused');
