import { Type } from 'typebox';
import { PageQuery, pageSchema } from '../http/paging.js';
import { MAX_CODE_CHARS } from './ticket-code-format.js';
import { Name, Nullable, NullableTimestamp, PathId, StringEnum, Timestamp } from '../schemas.js';

const TicketTypeIds = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: 100,
  uniqueItems: true,
  description: 'Ticket types this list admits; empty (the default): every ticket type of the event.',
});

export const CheckinCounts = Type.Object(
  {
    inside: Type.Integer({ description: 'Tickets inside now (entered and not exited).' }),
    entries: Type.Integer({ description: 'Admitted entry scans.' }),
    exits: Type.Integer({ description: 'Accepted exit scans.' }),
    admittedTickets: Type.Integer({ description: 'Tickets admitted at least once.' }),
    conflicts: Type.Integer({ description: 'Scans recorded as conflicts: a second admission of a ticket on a list that admits once.' }),
  },
  { $id: 'CheckinCounts' },
);

export const CheckinListSchema = Type.Object(
  {
    object: Type.Literal('checkin_list'),
    id: Type.String({ examples: ['cl_01m80eg3tperaacsapew6ns732'] }),
    eventId: Type.String(),
    name: Type.String(),
    ticketTypeIds: Type.Array(Type.String()),
    validFrom: NullableTimestamp,
    validUntil: NullableTimestamp,
    allowMultipleEntries: Type.Boolean(),
    scanExits: Type.Boolean(),
    counts: CheckinCounts,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'CheckinList' },
);

export const CreateCheckinListBody = Type.Object(
  {
    name: Name,
    ticketTypeIds: Type.Optional(TicketTypeIds),
    validFrom: Type.Optional(Nullable(Timestamp)),
    validUntil: Type.Optional(Nullable(Timestamp)),
    allowMultipleEntries: Type.Optional(Type.Boolean({ default: false, description: 'Whether a ticket may enter more than once (after an exit, or again).' })),
    scanExits: Type.Optional(Type.Boolean({ default: false, description: 'Whether exits are scanned: then `inside` drops on exit, and an entry while inside is refused.' })),
  },
  { $id: 'CreateCheckinListRequest', additionalProperties: false, examples: [{ name: 'Main entrance', ticketTypeIds: [], scanExits: true }] },
);

export const UpdateCheckinListBody = Type.Object(
  {
    name: Type.Optional(Name),
    ticketTypeIds: Type.Optional(TicketTypeIds),
    validFrom: Type.Optional(Nullable(Timestamp)),
    validUntil: Type.Optional(Nullable(Timestamp)),
    allowMultipleEntries: Type.Optional(Type.Boolean()),
    scanExits: Type.Optional(Type.Boolean()),
  },
  { $id: 'UpdateCheckinListRequest', additionalProperties: false, minProperties: 1, examples: [{ validUntil: '2027-05-01T23:00:00.000Z' }] },
);

export const CheckinListParams = Type.Object({ id: PathId(), listId: PathId() }, { additionalProperties: false });
export const CheckinListPage = pageSchema('CheckinListPage', CheckinListSchema);
export const CheckinListQuery = Type.Object(PageQuery, { additionalProperties: false });

export const Direction = StringEnum(['entry', 'exit'], { description: 'Entry (the default) or exit.' });
export const ScanId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+$', description: 'A unique id the scanner makes for the scan: a repeated scanId has no second effect and returns the first result.' });

const ConflictInfo = Type.Object(
  {
    keptScanId: Type.String(),
    keptScannedAt: Timestamp,
    keptDeviceId: Nullable(Type.String()),
  },
  { description: 'The admission kept instead of this scan (the earliest by scannedAt).' },
);

/**
 * The limits a scan's fields must keep for the scan to be checked at all. Tighter rules (a code of
 * at most MAX_CODE_CHARS characters, a time that parses and is not ahead, a known direction, ...) are checked
 * per scan by the service: a scan that breaks one is refused `invalid_scan` and the rest of the
 * batch is recorded, so one bad scan does not hold up a scanner's whole queue.
 */
const ScanText = (maxLength: number, description: string) => Type.String({ maxLength, description });

export const SyncBody = Type.Object(
  {
    deviceId: Type.String({ minLength: 1, maxLength: 64 }),
    scans: Type.Array(
      Type.Object(
        {
          scanId: ScanId,
          code: Type.Optional(ScanText(8192, `The ticket's code as scanned: any QR code's text fits; one longer than ${MAX_CODE_CHARS} characters is refused invalid_scan.`)),
          ticketId: Type.Optional(ScanText(1024, 'The ticket id, instead of a code.')),
          listId: Type.Optional(ScanText(1024, 'The check-in list of the scan; a scan without one is refused invalid_scan.')),
          direction: Type.Optional(ScanText(64, '`entry` (the default) or `exit`.')),
          scannedAt: ScanText(64, 'The scan\'s time on the scanner, ISO 8601; not more than 5 minutes ahead of the server.'),
          localResult: ScanText(64, 'What the scanner showed at the door: `admitted` or `refused`.'),
          gate: Type.Optional(ScanText(1024, 'The gate, 1 to 100 characters.')),
        },
        { additionalProperties: false, description: 'Exactly one of code and ticketId. A scan that breaks a rule of its own is refused invalid_scan, with a detail.' },
      ),
      { minItems: 1, maxItems: 1000 },
    ),
  },
  {
    $id: 'CheckinSyncRequest',
    additionalProperties: false,
    examples: [
      {
        deviceId: 'north-gate-phone-2',
        scans: [
          { scanId: '5f0c6f0e-3f8e-4a55-9b7e-2f1d4c3b2a10', code: 'M1AQAAAAAAAAAAAAAAAA', listId: 'cl_01m80eg3tperaacsapew6ns732', direction: 'entry', scannedAt: '2027-05-01T19:02:11.000Z', localResult: 'admitted' },
        ],
      },
    ],
  },
);

export const SyncResult = Type.Object(
  {
    scanId: Type.String(),
    outcome: StringEnum(['admitted', 'refused', 'conflict', 'duplicate']),
    recordedOutcome: Type.Optional(StringEnum(['admitted', 'refused', 'conflict', 'undone'], { description: 'For a duplicate: what the first sending of the scanId recorded, as it stands now.' })),
    reason: Type.Optional(Type.String({ description: 'The refusal code, for a refused scan: a rule of the list, or invalid_scan for a scan that is malformed itself (not recorded).' })),
    detail: Type.Optional(Type.String({ maxLength: 1000, description: 'For invalid_scan: what is wrong with the scan, naming its field as a JSON pointer into the request.' })),
    checkinId: Type.Optional(Type.String()),
    ticketId: Type.Optional(Type.String()),
    attendee: Type.Optional(Type.Object({ name: Type.String() })),
    ticketTypeName: Type.Optional(Type.String()),
    conflict: Type.Optional(ConflictInfo),
    displaced: Type.Optional(
      Type.Object(
        { scanId: Type.String(), scannedAt: Timestamp, deviceId: Nullable(Type.String()) },
        { description: 'An admitted scan that was kept over a later one, which became a conflict.' },
      ),
    ),
  },
  { $id: 'CheckinSyncResult' },
);

export const SyncResponse = Type.Object(
  {
    results: Type.Array(SyncResult),
    lists: Type.Array(CheckinListSchema, { description: 'Every list the scans named, with its counts after the sync.' }),
    list: Nullable(Type.Object(CheckinListSchema.properties), { description: 'The list of the scans, when they all named one list (the usual case), with its counts after the sync.' }),
  },
  { $id: 'CheckinSyncResponse' },
);

export const ConflictSchema = Type.Object(
  {
    object: Type.Literal('checkin_conflict'),
    id: Type.String({ description: 'The conflicting scan\'s check-in id.' }),
    listId: Type.String(),
    scanId: Type.String(),
    ticketId: Type.String(),
    scannedAt: Timestamp,
    deviceId: Nullable(Type.String()),
    kept: ConflictInfo,
    conflictedAt: Timestamp,
  },
  { $id: 'CheckinConflict' },
);
export const ConflictPage = pageSchema('CheckinConflictPage', ConflictSchema);

export const UndoQuery = Type.Object(
  { listId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Undo the ticket\'s last admitted entry on this list instead of the list-less check-in.' })) },
  { additionalProperties: false },
);

export const checkinListComponents = [CheckinCounts, CheckinListSchema, CreateCheckinListBody, UpdateCheckinListBody, CheckinListPage, SyncBody, SyncResult, SyncResponse, ConflictSchema, ConflictPage];
