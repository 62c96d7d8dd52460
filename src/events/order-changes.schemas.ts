import { Type } from 'typebox';
import { ref } from '../schemas.js';
import { OrderSchema, PaymentSchema } from './events.schemas.js';

const TicketId = Type.String({ minLength: 1, maxLength: 64, examples: ['tkt_01m80eg3tperaacsapew6ns732'] });
const Id = Type.String({ maxLength: 64 });
const SignedMoney = Type.Integer({ format: 'int64', minimum: -100_000_000_00, maximum: 100_000_000_00, description: 'Integer minor units (cents); negative: money back to the buyer' });

export const ChangeOrderBody = Type.Object(
  {
    cancelTickets: Type.Optional(Type.Array(TicketId, { maxItems: 100, description: 'Tickets of the order to cancel: their places return to inventory.' })),
    changeTypes: Type.Optional(
      Type.Array(Type.Object({ ticketId: TicketId, ticketTypeId: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }), {
        maxItems: 100,
        description: 'Tickets of the order to move to another ticket type of the event: each gets its price and a new code.',
      }),
    ),
    refund: Type.Optional(Type.Boolean({ default: true, description: 'Give back what the change frees (cancelled tickets, moves to cheaper types) through the order\'s provider; false: the organiser keeps it.' })),
  },
  {
    $id: 'ChangeOrderRequest',
    examples: [{ cancelTickets: ['tkt_01m80eg3tperaacsapew6ns732'], changeTypes: [{ ticketId: 'tkt_01m80eg3tperaacsapew6ns733', ticketTypeId: 'tt_01m80eg3tperaacsapew6ns734' }], refund: true }],
    additionalProperties: false,
  },
);

export const OrderChangeSchema = Type.Object(
  {
    order: ref(OrderSchema),
    cancelled: Type.Array(Id, { maxItems: 100, description: 'The tickets cancelled.' }),
    changed: Type.Array(
      Type.Object({ ticketId: Id, fromTicketTypeId: Id, toTicketTypeId: Id, difference: SignedMoney }),
      { maxItems: 100, description: 'The tickets moved to another type, with the price difference of each.' },
    ),
    difference: { ...SignedMoney, description: 'What the change did to the value of the order: the price differences of the moved tickets, less the prices of the cancelled ones.' },
    balanceDue: { ...SignedMoney, minimum: 0, description: 'What the buyer owes after the change (moves to dearer types, less what cancels and cheaper moves offset); `POST /v1/orders/:id/confirm` records it paid.' },
    refunds: Type.Array(ref(PaymentSchema), { maxItems: 200, description: 'The refunds the change made, one per ticket.' }),
  },
  { $id: 'OrderChange' },
);

export const orderChangeComponents = [ChangeOrderBody, OrderChangeSchema];
