import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso, parseTime } from '../time.js';
import { fanOut, type OutboxMessage } from '../webhooks/outbox.js';
import { onPostgres } from '../db/prepared.js';
import * as online from './checkin-lists.online.repository.js';
import * as repo from './checkin-lists.repository.js';
import type { CreateCheckinListBody, SyncBody, UpdateCheckinListBody } from './checkin-lists.schemas.js';
import { checkScanCodes, whyCodesUnknown } from './door.service.js';
import { requireEvent } from './events.repository.js';
import type { CheckinBody } from './events.schemas.js';
import type { TicketKey, TicketRow } from './tickets.repository.js';
import { MAX_CODE_CHARS } from './ticket-code-format.js';
import { presentTicket, type PresentedTicket } from './tickets.service.js';

type ListRow = repo.CheckinListRow;
type ScanRow = repo.ScanRow;
type Direction = 'entry' | 'exit';

/** How far ahead of the server's clock an offline scanner's own time may be (as checkins.service.ts). */
const CLOCK_SKEW_MS = 5 * 60_000;

// ---------------------------------------------------------------------------------------------
// Lists
// ---------------------------------------------------------------------------------------------

export function presentList(row: ListRow) {
  return {
    object: 'checkin_list' as const,
    id: row.id,
    eventId: row.eventId,
    name: row.name,
    ticketTypeIds: JSON.parse(row.ticketTypeIds) as string[],
    validFrom: iso(row.validFrom),
    validUntil: iso(row.validUntil),
    allowMultipleEntries: row.allowMultipleEntries === 1,
    scanExits: row.scanExits === 1,
    counts: countsOf(row),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

export type PresentedList = ReturnType<typeof presentList>;

/** The counts a list shows: all but its scans (which only say whether it may be deleted). */
export const countsOf = (row: ListRow) => {
  const { scans: _scans, ...shown } = Object.fromEntries(repo.COUNT_COLUMNS.map((c) => [c, row[c]])) as repo.ListCounts;
  return shown;
};

async function requireList(scope: TenantScope, eventId: string, listId: string): Promise<ListRow> {
  const list = await repo.findList(scope, eventId, listId);
  if (!list) throw notFound('check-in list', listId);
  return list;
}

/** The ticket type ids, checked to be the event's; a type of another event is a 400 naming its place. */
async function checkedTypes(scope: TenantScope, eventId: string, ids: string[] | undefined): Promise<string[] | undefined> {
  if (ids === undefined) return undefined;
  const known = new Set((await repo.ticketTypeNames(scope, eventId)).map((t) => t.id));
  ids.forEach((id, i) => {
    if (!known.has(id)) throw invalid(`/ticketTypeIds/${i}`, `is not a ticket type of event ${eventId}`);
  });
  return ids;
}

function checkedWindow(from: number | null, until: number | null): void {
  if (from !== null && until !== null && !(until > from)) throw invalid('/validUntil', 'must be after validFrom');
}

const time = (value: string | null | undefined, path: string) => (value === undefined ? undefined : value === null ? null : parseTime(value, path));

export async function createList(scope: TenantScope, eventId: string, input: Static<typeof CreateCheckinListBody>): Promise<PresentedList> {
  await requireEvent(scope, eventId);
  const ticketTypeIds = (await checkedTypes(scope, eventId, input.ticketTypeIds)) ?? [];
  const validFrom = time(input.validFrom, '/validFrom') ?? null;
  const validUntil = time(input.validUntil, '/validUntil') ?? null;
  checkedWindow(validFrom, validUntil);
  const now = Date.now();
  const settings: repo.ListSettingsRow = {
    id: newId('checkinList'),
    accountId: scope.accountId,
    eventId,
    name: input.name,
    ticketTypeIds: JSON.stringify(ticketTypeIds),
    validFrom,
    validUntil,
    allowMultipleEntries: input.allowMultipleEntries ? 1 : 0,
    scanExits: input.scanExits ? 1 : 0,
    createdAt: now,
    updatedAt: now,
  };
  await repo.insertList(scope, settings);
  return presentList({ ...settings, ...repo.NO_COUNTS });
}

export async function getList(scope: TenantScope, eventId: string, listId: string): Promise<PresentedList> {
  return presentList(await requireList(scope, eventId, listId));
}

export async function listLists(scope: TenantScope, eventId: string, query: PageParams): Promise<Page<PresentedList>> {
  const page = pageRequest(query, listTag(`checkin-lists:${eventId}`));
  await requireEvent(scope, eventId);
  const rows = await repo.pageLists(scope, eventId, page);
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentList);
}

/** Changes a list's settings; its counts stay (a change applies to the scans after it). */
export async function updateList(scope: TenantScope, eventId: string, listId: string, input: Static<typeof UpdateCheckinListBody>): Promise<PresentedList> {
  return scope.transaction(async (tx) => {
    const list = await repo.lockList(tx, eventId, listId, 'change');
    if (!list) throw notFound('check-in list', listId);
    const ticketTypeIds = await checkedTypes(tx, eventId, input.ticketTypeIds);
    const validFrom = time(input.validFrom, '/validFrom');
    const validUntil = time(input.validUntil, '/validUntil');
    checkedWindow(validFrom === undefined ? list.validFrom : validFrom, validUntil === undefined ? list.validUntil : validUntil);
    const updated = await repo.updateList(tx, listId, {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(ticketTypeIds !== undefined ? { ticketTypeIds: JSON.stringify(ticketTypeIds) } : {}),
      ...(validFrom !== undefined ? { validFrom } : {}),
      ...(validUntil !== undefined ? { validUntil } : {}),
      ...(input.allowMultipleEntries !== undefined ? { allowMultipleEntries: input.allowMultipleEntries ? 1 : 0 } : {}),
      ...(input.scanExits !== undefined ? { scanExits: input.scanExits ? 1 : 0 } : {}),
      updatedAt: Date.now(),
    });
    return presentList(updated!);
  });
}

/** Deletes a list that never recorded a scan; one with scans is 409 list_in_use (its history and counts stay). */
export async function deleteList(scope: TenantScope, eventId: string, listId: string): Promise<void> {
  await scope.transaction(async (tx) => {
    const list = await repo.lockList(tx, eventId, listId, 'delete');
    if (!list) throw notFound('check-in list', listId);
    if (!(await repo.deleteUnusedList(tx, listId))) {
      const [{ scans }] = (await repo.withCounts(tx, [list])) as [ListRow];
      throw new AppError('list_in_use', `Check-in list ${listId} has ${scans} recorded scans; it cannot be deleted.`, { scans });
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Scans
// ---------------------------------------------------------------------------------------------

/** One scan through a list, as the engine takes it: from an online check-in or a synced batch. */
interface ScanInput {
  scanId: string;
  key: TicketKey;
  listId: string;
  direction: Direction;
  scannedAt: number;
  /** What the scanner showed (a synced scan); null for an online scan, which the server decides. */
  localResult: 'admitted' | 'refused' | null;
  deviceId: string | null;
  gate: string | null;
}

export type RefusalCode =
  | 'not_found'
  | 'ticket_cancelled'
  | 'ticket_revoked'
  | 'key_retired'
  | 'code_not_yet_valid'
  | 'code_expired'
  | 'wrong_list' | 'not_yet_valid' | 'list_expired' | 'already_inside' | 'already_checked_in' | 'not_inside' | 'invalid_request';

/** What the engine decided for one scan: its row (as recorded, or as first recorded for a duplicate). */
interface Decided {
  input: ScanInput;
  row: ScanRow | null;
  ticket: TicketRow | undefined;
  duplicate: boolean;
  /** An admitted scan that this one displaced (it was later, and became a conflict). */
  displaced?: ScanRow;
}

/** A message of the batch, written at the end: a completed check-in only if its scan still admits then. */
type PendingMessage = { event: 'checkin.completed'; row: ScanRow; ticket: TicketRow } | { event: 'checkin.undone'; data: unknown };

interface Kept {
  scanId: string;
  scannedAt: number;
  deviceId: string | null;
}

/** A new scan row for `input` (its outcome as decided so far; nothing displaced, no conflict). */
function newScanRow(scope: TenantScope, eventId: string, input: ScanInput, ticketId: string | null, keyId: string | null, now: number, outcome: 'admitted' | 'refused'): ScanRow {
  return {
    id: newId('checkin'),
    accountId: scope.accountId,
    eventId,
    listId: input.listId,
    scanId: input.scanId,
    ticketId,
    direction: input.direction,
    scannedAt: input.scannedAt,
    deviceId: input.deviceId,
    gate: input.gate,
    keyId,
    localResult: input.localResult,
    outcome,
    reason: null,
    keptScanId: null,
    keptScannedAt: null,
    keptDeviceId: null,
    conflictedAt: null,
    createdAt: now,
  };
}

/**
 * Records scans through lists of one event, in the caller's transaction, and decides each:
 *   - a scan id already recorded on its list is a duplicate: nothing changes, its first result stands;
 *   - a signed code must verify at the scan's time, as on the list-less check-in (not_found,
 *     code_not_yet_valid, code_expired), and be its ticket's code now (key_retired, ticket_revoked);
 *   - the ticket must be the event's (not_found), not cancelled (ticket_cancelled), of a type the
 *     list admits (wrong_list), scanned within the list's window (not_yet_valid, list_expired);
 *   - an exit needs a list that scans exits (invalid_request) and the ticket inside (not_inside);
 *   - an entry on a list that admits once, of a ticket admitted already: an online scan is refused
 *     (already_inside, or already_checked_in after an exit); a synced scan the door admitted is a
 *     conflict, and the EARLIEST of the two admissions by scannedAt is kept: if the new scan is
 *     the earlier one it becomes the admission and the one kept so far becomes the conflict;
 *   - an entry of a ticket inside, on a list that scans exits, is refused online (already_inside);
 *   - a synced scan the door refused admits nobody: it is recorded refused, with the server's
 *     reason when the server would refuse it too.
 * Each ticket's state on the list is locked first (repo.lockListTickets), so concurrent scans of
 * one ticket are decided one after the other: of two concurrent online entries on a list that
 * admits once, exactly one is admitted. Scans of different tickets do not wait for each other: the
 * list itself is only read (repo.listsForScans), and its counts are added to in the last statement
 * (repo.addCounts). Everything is read in a few queries, decided in memory in the order given, and
 * written in a few statements, so a batch of 1000 costs about as many statements as a batch of one.
 */
async function recordScans(tx: TenantScope, eventId: string, scans: ScanInput[], keyId: string | null, now: number): Promise<{ decided: Array<Decided | { input: ScanInput; listMissing: true }>; lists: Map<string, repo.ScanListRow> }> {
  const listIds = [...new Set(scans.map((s) => s.listId))];
  const lists = new Map((await repo.listsForScans(tx, eventId, listIds)).map((l) => [l.id, l]));
  const known = scans.filter((s) => lists.has(s.listId));
  const foundIds = [...lists.keys()];

  const ticketIds = new Set<string>();
  const codes = new Set<string>();
  for (const s of known) {
    if (s.key.ticketId !== undefined) ticketIds.add(s.key.ticketId);
    else codes.add(s.key.code!);
  }
  const tickets = await repo.findTickets(tx, eventId, [...ticketIds], [...codes]);
  const byId = new Map(tickets.map((t) => [t.id, t]));
  const byCode = new Map(tickets.map((t) => [t.code, t]));
  // Signed codes are checked first, as on the list-less check-in (door.service.ts): a code that
  // fails (outside its window; not a ticket's code and not verifying) is refused before its ticket
  // counts; one that verifies but is no ticket's code now was replaced (its key retired, or its
  // serial revoked by a transfer or reissue).
  const codeChecks = await checkScanCodes(tx, eventId, known.map((s) => ({ code: s.key.code, at: s.scannedAt })), (code) => byCode.has(code));
  const codeRefusals = new Map<ScanInput, RefusalCode>();
  const unknownCodes: string[] = [];
  known.forEach((s, i) => {
    const refusal = codeChecks[i];
    if (refusal) codeRefusals.set(s, refusal);
    else if (s.key.code !== undefined && !byCode.has(s.key.code)) unknownCodes.push(s.key.code);
  });
  const replaced = await whyCodesUnknown(tx, eventId, unknownCodes);
  for (const s of known) {
    const why = s.key.code === undefined || codeRefusals.has(s) ? undefined : replaced.get(s.key.code);
    if (why) codeRefusals.set(s, why);
  }
  // The states of the tickets scanned, locked: everything read after this (the scans recorded, the
  // exits stranded) is as the last scan of the same ticket committed it.
  const pairs = known.flatMap((s) => {
    const ticket = codeRefusals.has(s) ? undefined : s.key.ticketId !== undefined ? byId.get(s.key.ticketId) : byCode.get(s.key.code!);
    return ticket ? [{ listId: s.listId, ticketId: ticket.id }] : [];
  });
  const states = new Map((pairs.length === 0 ? [] : await repo.lockListTickets(tx, pairs)).map((s) => [`${s.listId} ${s.ticketId}`, s]));
  const existing = foundIds.length === 0 ? [] : await repo.findScans(tx, foundIds, [...new Set(known.map((s) => s.scanId))]);
  const recorded = new Map(existing.map((r) => [`${r.listId} ${r.scanId}`, r]));
  // A scan sent again answers with the ticket it was recorded for (which its code may no longer name).
  const missing = [...new Set(existing.flatMap((r) => (r.ticketId && !byId.has(r.ticketId) ? [r.ticketId] : [])))];
  for (const t of missing.length === 0 ? [] : await repo.findTickets(tx, eventId, missing, [])) byId.set(t.id, t);
  const rowsById = new Map(existing.map((r) => [r.id, r]));
  // Exits a door let through that were refused not_inside because their entry had not arrived yet:
  // an entry admitted before one of them takes it up (lists that scan exits, when the batch enters).
  const exitLists = [...lists.values()].filter((l) => l.scanExits === 1 && known.some((s) => s.listId === l.id && s.direction === 'entry')).map((l) => l.id);
  const strandedExits = new Map<string, ScanRow[]>();
  for (const exit of exitLists.length === 0 || tickets.length === 0 ? [] : await repo.strandedExits(tx, exitLists, tickets.map((t) => t.id))) {
    const key = `${exit.listId} ${exit.ticketId}`;
    strandedExits.set(key, [...(strandedExits.get(key) ?? []), rowsById.get(exit.id) ?? exit]);
  }

  const inserts: ScanRow[] = [];
  const changedStates = new Map<string, repo.ListTicketRow>();
  const displacedRows: Array<{ row: ScanRow; kept: Kept; listId: string; ticketId: string }> = [];
  const admittedExits: ScanRow[] = [];
  const pending: PendingMessage[] = [];
  const decided: Array<Decided | { input: ScanInput; listMissing: true }> = new Array(scans.length);

  // In the order the scans were made, whatever order they arrived in (ties: as sent).
  const order = scans.map((_, i) => i).sort((a, b) => scans[a]!.scannedAt - scans[b]!.scannedAt || a - b);
  for (const index of order) {
    const input = scans[index]!;
    const list = lists.get(input.listId);
    if (!list) {
      decided[index] = { input, listMissing: true };
      continue;
    }
    const first = recorded.get(`${list.id} ${input.scanId}`);
    if (first) {
      decided[index] = { input, row: first, ticket: first.ticketId ? byId.get(first.ticketId) : undefined, duplicate: true };
      continue;
    }
    const codeRefusal = codeRefusals.get(input);
    const ticket = codeRefusal === 'not_found' ? undefined : input.key.ticketId !== undefined ? byId.get(input.key.ticketId) : byCode.get(input.key.code!);
    const stateKey = ticket ? `${list.id} ${ticket.id}` : '';
    const state: repo.ListTicketRow = (ticket && states.get(stateKey)) || { listId: list.id, ticketId: ticket?.id ?? '', accountId: tx.accountId, ...repo.EMPTY_STATE };
    const row = newScanRow(tx, eventId, input, ticket?.id ?? null, keyId, now, 'refused');
    const result: Decided = { input, row, ticket, duplicate: false };
    let reapplied: ScanRow | undefined;
    const reason = codeRefusal ?? ruleRefusal(list, ticket, input);
    const single = list.allowMultipleEntries === 0;
    const doorAdmitted = input.localResult === 'admitted';
    if (reason) {
      row.reason = reason;
    } else if (input.direction === 'exit') {
      if (state.inside === 0) row.reason = 'not_inside';
      else if (input.localResult === 'refused') row.reason = null;
      else {
        row.outcome = 'admitted';
        state.inside = 0;
        list.change.inside -= 1;
        list.change.exits += 1;
      }
    } else if (single && state.entries > 0) {
      if (doorAdmitted) {
        // Two doors admitted the ticket: the earliest admission is kept, the other is a conflict.
        list.change.conflicts += 1;
        const kept: Kept = { scanId: state.keptScanId!, scannedAt: state.keptScannedAt!, deviceId: state.keptDeviceId };
        if (input.scannedAt < kept.scannedAt) {
          // The row kept so far: read already, or written by this batch, or known by its state alone.
          const former = rowsById.get(state.keptRowId!) ?? ({ id: state.keptRowId!, scanId: kept.scanId, scannedAt: kept.scannedAt, deviceId: kept.deviceId } as ScanRow);
          const keptNow: Kept = { scanId: input.scanId, scannedAt: input.scannedAt, deviceId: input.deviceId };
          displacedRows.push({ row: former, kept: keptNow, listId: list.id, ticketId: ticket!.id });
          // The former admission is a conflict now, and so is every conflict that named it: they all name the new one.
          Object.assign(former, { outcome: 'conflict', keptScanId: keptNow.scanId, keptScannedAt: keptNow.scannedAt, keptDeviceId: keptNow.deviceId, conflictedAt: now });
          for (const other of rowsById.values()) {
            if (other.listId === list.id && other.ticketId === ticket!.id && other.outcome === 'conflict' && other.keptScanId === former.scanId) {
              Object.assign(other, { keptScanId: keptNow.scanId, keptScannedAt: keptNow.scannedAt, keptDeviceId: keptNow.deviceId });
            }
          }
          // An admission recorded before this batch was announced: it is undone, naming the one kept instead.
          if (!inserts.includes(former)) {
            pending.push({
              event: 'checkin.undone',
              data: { ...presentTicket(ticket!), listId: list.id, direction: 'entry' as const, reason: 'displaced' as const, checkinId: former.id, displacedBy: { scanId: keptNow.scanId, scannedAt: iso(keptNow.scannedAt), deviceId: keptNow.deviceId } },
            });
          }
          result.displaced = former;
          row.outcome = 'admitted';
          Object.assign(state, { keptScanId: input.scanId, keptScannedAt: input.scannedAt, keptDeviceId: input.deviceId, keptRowId: row.id });
        } else {
          Object.assign(row, { outcome: 'conflict', keptScanId: kept.scanId, keptScannedAt: kept.scannedAt, keptDeviceId: kept.deviceId, conflictedAt: now });
        }
      } else {
        row.reason = state.inside === 1 ? 'already_inside' : 'already_checked_in';
      }
    } else if (state.inside === 1 && list.scanExits === 1 && !doorAdmitted) {
      row.reason = 'already_inside';
    } else if (input.localResult === 'refused') {
      row.reason = null;
    } else {
      row.outcome = 'admitted';
      const cameIn = state.inside === 0;
      if (cameIn) {
        state.inside = 1;
        list.change.inside += 1;
      }
      if (state.entries === 0) list.change.admittedTickets += 1;
      state.entries += 1;
      list.change.entries += 1;
      if (state.keptRowId === null) Object.assign(state, { keptScanId: input.scanId, keptScannedAt: input.scannedAt, keptDeviceId: input.deviceId, keptRowId: row.id });
      // An exit made after this entry, refused when it arrived first: it takes the ticket out again
      // (only when this entry brought it in: a ticket inside already may have re-entered since).
      const stranded = cameIn && ticket ? strandedExits.get(stateKey) : undefined;
      const exit = stranded?.find((x) => x.outcome === 'refused' && x.scannedAt > input.scannedAt);
      if (exit) {
        Object.assign(exit, { outcome: 'admitted', reason: null });
        admittedExits.push(exit);
        reapplied = exit;
        state.inside = 0;
        list.change.inside -= 1;
        list.change.exits += 1;
      }
    }
    if (ticket && row.outcome !== 'refused') {
      states.set(stateKey, state);
      changedStates.set(stateKey, state);
    }
    if (ticket && row.outcome === 'admitted') pending.push({ event: 'checkin.completed', row, ticket });
    if (ticket && reapplied) pending.push({ event: 'checkin.completed', row: reapplied, ticket });
    list.change.scans += 1;
    inserts.push(row);
    rowsById.set(row.id, row);
    recorded.set(`${list.id} ${input.scanId}`, row);
    decided[index] = result;
  }

  await repo.insertScans(tx, inserts);
  if (changedStates.size > 0) await repo.saveListTickets(tx, [...changedStates.values()]);
  // In the order decided, so that a chain of displacements ends with every conflict naming the last one kept.
  for (const { row, kept, listId, ticketId } of displacedRows) {
    await repo.markConflict(tx, row.id, kept, now);
    await repo.repointConflicts(tx, listId, ticketId, row.scanId, kept);
  }
  if (admittedExits.length > 0) await repo.admitExits(tx, admittedExits.map((x) => x.id));

  const messages: OutboxMessage[] = pending.flatMap((m): OutboxMessage[] =>
    m.event === 'checkin.undone' ? [m] : m.row.outcome === 'admitted' ? [{ event: m.event, data: admission(m.row, m.ticket) }] : [],
  );
  if (messages.length > 0) await fanOut.inTransaction(tx.db, tx.accountId, messages, now);
  // Last: what this transaction changed (the lists' counts were read as zero) is added to a counter
  // row of each list, which concurrent scans of the list add to too (the list was only read).
  for (const list of lists.values()) {
    if (Object.values(list.change).some((n) => n !== 0)) await repo.addCounts(tx, list.id, list.change);
  }
  return { decided, lists };
}

/**
 * Runs the transaction again, once, when a concurrent one recorded the same scan id on the same
 * list first (PostgreSQL's unique violation on checkin_scans_list_scan_id). Scans of one ticket
 * wait for each other (repo.lockListTickets) and see the first's row; this covers what no ticket's
 * state locks: a scan id sent again at the same moment with an unknown code, or for another ticket.
 * The second run finds the scan recorded and answers as the first did.
 */
async function onceMoreIfRaced<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const e = error as { code?: unknown; constraint?: unknown };
    if (e.code === '23505' && e.constraint === 'checkin_scans_list_scan_id') return run();
    throw error;
  }
}

/** The first rule of the ticket and the list (before the ticket's state on the list) that refuses the scan. */
function ruleRefusal(list: Pick<ListRow, 'ticketTypeIds' | 'validFrom' | 'validUntil' | 'scanExits'>, ticket: TicketRow | undefined, input: ScanInput): RefusalCode | null {
  if (!ticket) return 'not_found';
  if (ticket.status === 'cancelled') return 'ticket_cancelled';
  const types = JSON.parse(list.ticketTypeIds) as string[];
  if (types.length > 0 && !types.includes(ticket.ticketTypeId)) return 'wrong_list';
  if (list.validFrom !== null && input.scannedAt < list.validFrom) return 'not_yet_valid';
  if (list.validUntil !== null && input.scannedAt > list.validUntil) return 'list_expired';
  if (input.direction === 'exit' && list.scanExits === 0) return 'invalid_request';
  return null;
}

/** An admitted scan as the API answers it and `checkin.completed` carries it: the list-less check-in's shape, with the list, direction and scan id. */
function admission(row: ScanRow, ticket: TicketRow) {
  const presented = presentTicket(ticket);
  return {
    id: row.id,
    action: 'checkin' as const,
    eventId: row.eventId,
    ticketId: ticket.id,
    checkedInAt: iso(row.scannedAt),
    gate: row.gate,
    createdAt: iso(row.createdAt),
    ticket: presented,
    attendee: presented.attendee,
    listId: row.listId,
    direction: row.direction as Direction,
    scanId: row.scanId,
  };
}

const REFUSAL_DETAIL: Record<RefusalCode, string> = {
  not_found: 'No such ticket for this event.',
  ticket_cancelled: 'The ticket is cancelled.',
  ticket_revoked: 'This code was replaced (a transfer or a reissue); only the ticket\'s new code admits it.',
  key_retired: 'The key that signed this code is retired; the ticket has a new code.',
  code_not_yet_valid: 'The code is not valid yet at the time of the scan.',
  code_expired: 'The code was no longer valid at the time of the scan.',
  wrong_list: "The ticket's type is not admitted by this check-in list.",
  not_yet_valid: 'The check-in list does not admit anyone yet at the time of the scan.',
  list_expired: 'The check-in list no longer admitted anyone at the time of the scan.',
  already_inside: 'The ticket is inside already.',
  already_checked_in: 'The ticket entered before, and this check-in list admits once.',
  not_inside: 'The ticket is not inside, so it cannot exit.',
  invalid_request: 'This check-in list does not scan exits.',
};

/** The online refusal of a refused scan, as the API's problem. */
function refusalError(row: ScanRow, ticketId: string | undefined): AppError {
  const code = (row.reason ?? 'not_found') as RefusalCode;
  if (code === 'invalid_request') return invalid('/direction', 'exit needs a check-in list with scanExits on');
  const extensions: Record<string, unknown> = { scanId: row.scanId, listId: row.listId, ...(ticketId ? { ticketId } : {}) };
  return new AppError(code, REFUSAL_DETAIL[code], extensions);
}

/**
 * POST /events/:id/checkin with a `listId`: one scan through the list, decided by the server
 * (recordScans). 201 with the check-in when admitted; the refusal's problem otherwise. A repeated
 * `scanId` answers as the first did, with no second effect.
 */
export async function checkInOnList(scope: TenantScope, eventId: string, input: Static<typeof CheckinBody>, keyId: string | null) {
  if ((input.ticketId === undefined) === (input.code === undefined)) {
    throw invalid(input.ticketId === undefined ? '/ticketId' : '/code', 'send exactly one of ticketId and code');
  }
  const now = Date.now();
  const scannedAt = input.checkedInAt === undefined ? now : parseTime(input.checkedInAt, '/checkedInAt');
  if (scannedAt > now + CLOCK_SKEW_MS) throw invalid('/checkedInAt', 'is in the future');
  const key: TicketKey = input.ticketId !== undefined ? { ticketId: input.ticketId } : { code: input.code! };
  const scan: ScanInput = {
    scanId: input.scanId ?? newId('checkin'),
    key,
    listId: input.listId!,
    direction: input.direction ?? 'entry',
    scannedAt,
    localResult: null,
    deviceId: null,
    gate: input.gate ?? null,
  };
  const admitted = await admitAsRead(scope, eventId, scan, keyId, now);
  if (admitted) return admitted;
  // A refusal is recorded too (so that its scanId answers the same later): it is returned from
  // the transaction, which commits, and thrown after.
  const decision = await onceMoreIfRaced(() => scope.transaction(async (tx) => {
    const { decided } = await recordScans(tx, eventId, [scan], keyId, now);
    const [d] = decided;
    // A list of the event was found, so the event is there: only a missing list asks which is missing.
    if (!d || 'listMissing' in d) {
      await requireEvent(tx, eventId);
      throw notFound('check-in list', scan.listId);
    }
    const row = d.row!;
    if (row.outcome === 'admitted' && d.ticket) return admission(row, d.ticket);
    if (row.outcome === 'refused') return refusalError(row, d.ticket?.id);
    // Undone, or (a synced scan's id sent again online) a conflict: the scan no longer admits.
    return new AppError('already_checked_in', `Scan ${row.scanId} was recorded as ${row.outcome}.`, { scanId: row.scanId, listId: row.listId, ticketId: row.ticketId });
  }));
  if (decision instanceof AppError) throw decision;
  return decision;
}

export type ListAdmission = ReturnType<typeof admission>;

/**
 * An online entry that the rules admit, decided from one read (online.readOnlineScan) and written
 * in one statement on PostgreSQL (online.writeOnlineEntry, only if the ticket and its state on the
 * list are still as read: two round trips, as the check-in without a list), or in a transaction on
 * SQLite (whose write lock holds from the read to the commit). Undefined for everything else,
 * which recordScans decides in a transaction: a list or ticket not found, a scan id recorded
 * already, a code or a rule that refuses (refusals are recorded there), an exit, a list that scans
 * exits (an entry may take up an exit that arrived before it), a state changed between the read
 * and the write.
 */
async function admitAsRead(scope: TenantScope, eventId: string, scan: ScanInput, keyId: string | null, now: number): Promise<ListAdmission | undefined> {
  if (scan.direction !== 'entry') return undefined;
  if (!onPostgres(scope.db)) {
    return scope.transaction(async (tx) => {
      const decided = await decideOnlineEntry(tx, eventId, scan, keyId, now);
      if (!decided) return undefined;
      const { entry, row, admitted } = decided;
      await repo.saveListTickets(tx, [{ listId: scan.listId, ticketId: row.ticketId!, accountId: tx.accountId, ...entry.state }]);
      await repo.insertScans(tx, [row]);
      await fanOut.inTransaction(tx.db, tx.accountId, [{ event: 'checkin.completed', data: admitted }], now);
      await repo.addCounts(tx, scan.listId, { ...repo.NO_COUNTS, inside: entry.addInside, entries: 1, admittedTickets: entry.addAdmitted, scans: 1 });
      return admitted;
    });
  }
  const decided = await decideOnlineEntry(scope, eventId, scan, keyId, now);
  if (!decided) return undefined;
  return (await online.writeOnlineEntry(scope, decided.entry, { event: 'checkin.completed', data: decided.admitted })) ? decided.admitted : undefined;
}

/** The entry admitAsRead writes, from its read: the ticket's state after it, its scan row and its admission; undefined when it is not one. */
async function decideOnlineEntry(scope: TenantScope, eventId: string, scan: ScanInput, keyId: string | null, now: number) {
  const read = await online.readOnlineScan(scope, eventId, scan.listId, scan.key, scan.scanId);
  if (!read || read.scanRecorded || read.list.scanExits === 1) return undefined;
  // the read found the ticket by this code: the server issued it, only its window is checked
  const [codeRefusal] = await checkScanCodes(scope, eventId, [{ code: scan.key.code, at: scan.scannedAt }], () => true);
  if (codeRefusal || ruleRefusal(read.list, read.ticket, scan)) return undefined;
  const was = read.state ?? repo.EMPTY_STATE;
  if (read.list.allowMultipleEntries === 0 && was.entries > 0) return undefined;
  const row = newScanRow(scope, eventId, scan, read.ticket.id, keyId, now, 'admitted');
  const rowId = row.id;
  const state = {
    ...was,
    inside: 1,
    entries: was.entries + 1,
    ...(was.keptRowId === null ? { keptScanId: scan.scanId, keptScannedAt: scan.scannedAt, keptDeviceId: null, keptRowId: rowId } : {}),
  };
  const entry: online.OnlineEntry = { read, eventId, listId: scan.listId, rowId, scanId: scan.scanId, scannedAt: scan.scannedAt, gate: scan.gate, keyId, now, state, addInside: was.inside === 0 ? 1 : 0, addAdmitted: was.entries === 0 ? 1 : 0 };
  return { entry, row, admitted: admission(row, read.ticket) };
}

function syncResult(d: Decided, typeNames: Map<string, string>) {
  const row = d.row!;
  const kept = row.keptScanId !== null ? { keptScanId: row.keptScanId, keptScannedAt: iso(row.keptScannedAt!), keptDeviceId: row.keptDeviceId } : undefined;
  const outcome = row.outcome === 'undone' ? 'refused' : (row.outcome as 'admitted' | 'refused' | 'conflict');
  return {
    scanId: d.input.scanId,
    outcome: d.duplicate ? ('duplicate' as const) : outcome,
    ...(d.duplicate ? { recordedOutcome: row.outcome as 'admitted' | 'refused' | 'conflict' | 'undone' } : {}),
    ...(row.reason ? { reason: row.reason } : {}),
    checkinId: row.id,
    ...(d.ticket
      ? { ticketId: d.ticket.id, attendee: { name: d.ticket.attendeeName }, ticketTypeName: typeNames.get(d.ticket.ticketTypeId) ?? '' }
      : {}),
    ...(kept ? { conflict: kept } : {}),
    ...(d.displaced ? { displaced: { scanId: d.displaced.scanId, scannedAt: iso(d.displaced.scannedAt), deviceId: d.displaced.deviceId } } : {}),
  };
}

type SyncScan = Static<typeof SyncBody>['scans'][number];

/** What is wrong with a synced scan by itself (its field's JSON pointer and the rule), or its input to the engine. */
function checkedScan(s: SyncScan, i: number, deviceId: string, now: number): ScanInput | { scanId: string; detail: string } {
  const bad = (field: string, message: string) => ({ scanId: s.scanId, detail: `/scans/${i}/${field} ${message}` });
  if ((s.ticketId === undefined) === (s.code === undefined)) return bad(s.ticketId === undefined ? 'code' : 'ticketId', 'send exactly one of ticketId and code');
  if (s.code !== undefined && (s.code.length < 1 || s.code.length > MAX_CODE_CHARS)) return bad('code', `must be 1 to ${MAX_CODE_CHARS} characters: it is no ticket's code`);
  if (s.ticketId !== undefined && (s.ticketId.length < 1 || s.ticketId.length > 64)) return bad('ticketId', 'must be 1 to 64 characters');
  if (s.listId === undefined) return bad('listId', 'is required: a synced scan goes through a check-in list');
  if (s.listId.length < 1 || s.listId.length > 64) return bad('listId', 'must be 1 to 64 characters');
  if (s.direction !== undefined && s.direction !== 'entry' && s.direction !== 'exit') return bad('direction', 'must be entry or exit');
  if (s.localResult !== 'admitted' && s.localResult !== 'refused') return bad('localResult', 'must be admitted or refused');
  if (s.gate !== undefined && (s.gate.length < 1 || s.gate.length > 100)) return bad('gate', 'must be 1 to 100 characters');
  const scannedAt = Date.parse(s.scannedAt);
  if (Number.isNaN(scannedAt)) return bad('scannedAt', 'is not a time');
  if (scannedAt > now + CLOCK_SKEW_MS) return bad('scannedAt', 'is in the future');
  return {
    scanId: s.scanId,
    key: s.ticketId !== undefined ? { ticketId: s.ticketId } : { code: s.code! },
    listId: s.listId,
    direction: s.direction ?? 'entry',
    scannedAt,
    localResult: s.localResult,
    deviceId,
    gate: s.gate ?? null,
  };
}

/**
 * POST /events/:id/checkin/sync: a scanner's queue of offline scans, all in one transaction
 * (recordScans). Each scan's result says what the server recorded; a list that does not exist
 * refuses its scans (not_found) without recording them, and so does a scan that is malformed by
 * itself (invalid_scan, with a detail): the rest of the batch is recorded all the same.
 */
export async function sync(scope: TenantScope, eventId: string, body: Static<typeof SyncBody>, keyId: string | null) {
  const now = Date.now();
  const checked = body.scans.map((s, i) => checkedScan(s, i, body.deviceId, now));
  const scans = checked.filter((c): c is ScanInput => 'key' in c);
  return onceMoreIfRaced(() => scope.transaction(async (tx) => {
    await requireEvent(tx, eventId);
    const { decided, lists } = scans.length > 0 ? await recordScans(tx, eventId, scans, keyId, now) : { decided: [], lists: new Map<string, ListRow>() };
    const typeNames = new Map((await repo.ticketTypeNames(tx, eventId)).map((t) => [t.id, t.name]));
    const answers = decided.map((d) => ('listMissing' in d ? { scanId: d.input.scanId, outcome: 'refused' as const, reason: 'not_found' } : syncResult(d, typeNames)));
    let next = 0;
    const results = checked.map((c) => ('key' in c ? answers[next++]! : { scanId: c.scanId, outcome: 'refused' as const, reason: 'invalid_scan', detail: c.detail }));
    // The lists' counts as they are now, with what concurrent scans added.
    const presented = (await repo.withCounts(tx, [...lists.values()])).map(presentList);
    return { results, lists: presented, list: presented.length === 1 ? presented[0]! : null };
  }));
}

/** A list's conflicts, newest first. */
export async function listConflicts(scope: TenantScope, eventId: string, listId: string, query: PageParams) {
  const page = pageRequest(query, listTag(`checkin-conflicts:${listId}`));
  await requireList(scope, eventId, listId);
  const rows = await repo.pageConflicts(scope, listId, page);
  return toPage(rows, page, (r) => ({ key: r.conflictedAt!, id: r.id }), (r) => ({
    object: 'checkin_conflict' as const,
    id: r.id,
    listId: r.listId,
    scanId: r.scanId,
    ticketId: r.ticketId!,
    scannedAt: iso(r.scannedAt),
    deviceId: r.deviceId,
    kept: { keptScanId: r.keptScanId!, keptScannedAt: iso(r.keptScannedAt!), keptDeviceId: r.keptDeviceId },
    conflictedAt: iso(r.conflictedAt!),
  }));
}

/**
 * DELETE /events/:id/checkin/:ticketId?listId=: undoes the ticket's last admitted entry on the
 * list (a wrong scan). The entry is recorded as undone; the ticket is no longer inside, and on a
 * list that admits once it may enter again. 409 not_checked_in when it has no admitted entry.
 */
export async function undoOnList(scope: TenantScope, eventId: string, ticketId: string, listId: string): Promise<PresentedTicket & { listId: string; direction: Direction }> {
  return scope.transaction(async (tx) => {
    await requireEvent(tx, eventId);
    const [list] = await repo.listsForScans(tx, eventId, [listId]);
    if (!list) throw notFound('check-in list', listId);
    const [ticket] = await repo.findTickets(tx, eventId, [ticketId], []);
    if (!ticket) throw new AppError('not_found', `No ticket ${ticketId} for event ${eventId}.`);
    // The ticket's state on the list, locked (as a scan of it locks it), before its entries are read.
    const [state] = await repo.lockListTickets(tx, [{ listId, ticketId }]);
    const entry = await repo.lastAdmittedEntry(tx, listId, ticketId);
    if (!entry || !state) throw new AppError('not_checked_in', `Ticket ${ticketId} has no admitted entry on check-in list ${listId}.`);
    const now = Date.now();
    await repo.setOutcome(tx, entry.id, 'undone');
    const change = { ...repo.NO_COUNTS, entries: -1 };
    state.entries -= 1;
    if (state.inside === 1) {
      state.inside = 0;
      change.inside = -1;
    }
    if (state.entries === 0) {
      change.admittedTickets = -1;
      Object.assign(state, { keptScanId: null, keptScannedAt: null, keptDeviceId: null, keptRowId: null });
    } else if (state.keptRowId === entry.id) {
      const previous = await repo.lastAdmittedEntry(tx, listId, ticketId);
      Object.assign(state, previous ? { keptScanId: previous.scanId, keptScannedAt: previous.scannedAt, keptDeviceId: previous.deviceId, keptRowId: previous.id } : {});
    }
    await repo.saveListTickets(tx, [state]);
    const undone = { ...presentTicket(ticket), listId, direction: 'entry' as const };
    await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'checkin.undone', data: undone }], now);
    await repo.addCounts(tx, listId, change);
    return undone;
  });
}
