import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import { matching } from './events.repository.js';
import type { AttendeeListQuery } from './events.schemas.js';

export type AttendeeFilters = Pick<Static<typeof AttendeeListQuery>, 'checkedIn' | 'ticketTypeId' | 'q'>;
type Filters = AttendeeFilters;

/** One row per valid ticket, with its type's name, filtered. */
function attendeeQuery(scope: TenantScope, eventId: string, filters: Filters) {
  let query = scope
    .selectFrom('tickets')
    .innerJoin('ticketTypes', 'ticketTypes.id', 'tickets.ticketTypeId')
    .select([
      'tickets.id as ticketId',
      'tickets.orderId',
      'tickets.attendeeName as name',
      'tickets.attendeeEmail as email',
      'tickets.ticketTypeId',
      'ticketTypes.name as ticketTypeName',
      'tickets.checkedInAt',
    ])
    .where('tickets.eventId', '=', eventId)
    .where('tickets.status', '=', 'valid');
  if (filters.checkedIn !== undefined) query = query.where('tickets.checkedInAt', filters.checkedIn ? 'is not' : 'is', null);
  if (filters.ticketTypeId !== undefined) query = query.where('tickets.ticketTypeId', '=', filters.ticketTypeId);
  if (filters.q !== undefined) {
    query = query.where(matching(scope.db, filters.q, ['tickets.attendeeName', 'tickets.attendeeEmail']));
  }
  return query;
}

export type AttendeeRow = Awaited<ReturnType<ReturnType<typeof attendeeQuery>['execute']>>[number];

/** One page of attendees, in ticket order, as a query (the query-plan test reads its plan). */
export const attendeePageQuery = (scope: TenantScope, eventId: string, filters: Filters, page: KeysetPage) =>
  keysetPage(attendeeQuery(scope, eventId, filters), page, 'tickets.id', 'tickets.id', 'asc');

export function attendeePage(scope: TenantScope, eventId: string, filters: Filters, page: KeysetPage): Promise<AttendeeRow[]> {
  return attendeePageQuery(scope, eventId, filters, page).execute();
}

/** Up to `limit` attendees after ticket id `after` (from the first if null), in ticket order. */
export function attendeesAfter(scope: TenantScope, eventId: string, filters: Filters, after: string | null, limit: number): Promise<AttendeeRow[]> {
  let batch = attendeeQuery(scope, eventId, filters);
  if (after !== null) batch = batch.where('tickets.id', '>', after);
  return batch.orderBy('tickets.id').limit(limit).execute();
}
