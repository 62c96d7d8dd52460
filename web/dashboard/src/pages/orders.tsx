import { useEffect, useRef, useState } from 'preact/hooks';
import { api, failure, minorUnits, money, Problem, when } from '../api.js';
import { ErrorNote, Pager, timeLeft, useApi, useNow, usePaged } from '../use-api.js';
import { TwoStep } from '../two-step.js';

/** The Order of GET /v1/orders/:id and GET /v1/events/:id/orders (OrderSchema in src/events/events.schemas.ts). */
interface Order {
  id: string;
  status: 'pending' | 'completed' | 'expired' | 'cancelled';
  buyer: { name: string; email: string };
  items: Array<{ ticketTypeId: string; quantity: number; unitPrice: number; amount: number; discount?: number }>;
  total: number;
  currency: string;
  refundedAmount: number;
  balanceDue: number;
  payment: { provider: 'manual' | 'stripe' | 'external' | null; status: string; checkoutUrl: string | null };
  payments: Payment[];
  tickets: Ticket[];
  voucher?: { id: string; code: string } | null;
  expiresAt: string | null;
  completedAt: string | null;
  createdAt: string;
}

interface Ticket {
  id: string;
  ticketTypeId: string;
  status: 'valid' | 'cancelled';
  attendee: { name: string; email: string };
  price: number;
  currency: string;
  refundedAmount: number;
  checkedIn: boolean;
  cancelledAt: string | null;
}

interface Payment {
  id: string;
  kind: 'charge' | 'refund';
  provider: string;
  amount: number;
  currency: string;
  status: 'pending' | 'succeeded' | 'failed';
  ticketId: string | null;
  reference: string | null;
  createdAt: string;
}

/** The answer of POST /v1/orders/:id/changes (OrderChangeSchema). */
interface OrderChange {
  order: Order;
  cancelled: string[];
  refunds: Payment[];
}

export type TypeNames = (ticketTypeId: string) => string;

const PAGE_SIZE = 20;
const STATUSES = [
  ['', 'All orders'],
  ['pending', 'Pending (waiting for their money)'],
  ['completed', 'Completed'],
  ['expired', 'Expired'],
  ['cancelled', 'Cancelled'],
] as const;

/** Who took the money and where it stands: "manual · partially refunded". */
const paymentOf = (order: Order) => `${order.payment.provider ?? 'free'} · ${order.payment.status.replace('_', ' ')}`;

const places = (order: Order) => order.items.reduce((n, item) => n + item.quantity, 0);

/** What can still be given back: the succeeded charges less the refunds pending or succeeded (the API's own count). */
const refundable = (order: Order) =>
  order.payments.reduce((left, p) => (p.kind === 'charge' ? (p.status === 'succeeded' ? left + p.amount : left) : p.status === 'failed' ? left : left - p.amount), 0);

/** A refund as the API answered it, in a sentence. */
function refundOutcome(refund: Payment): string {
  const amount = money(refund.amount, refund.currency);
  if (refund.status === 'succeeded') return `Refund of ${amount} succeeded.`;
  if (refund.status === 'pending') return `Refund of ${amount} is pending: the payment provider has not confirmed it yet; Montage asks it again.`;
  return `Refund of ${amount} failed: its amount can be refunded again.`;
}

/**
 * An event's orders, newest first, a page at a time: pending ones with the time left of their hold,
 * a manual payment confirmed, a pending order cancelled, and one order's tickets and payments with
 * refunds. `onChanged` runs after each change (the inventory on the page moves with it).
 */
export function OrdersSection({ eventId, typeName, onChanged }: { eventId: string; typeName: TypeNames; onChanged: () => void }) {
  const [status, setStatus] = useState('');
  const [open, setOpen] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const orders = usePaged<Order>(`/events/${encodeURIComponent(eventId)}/orders${status ? `?status=${status}` : ''}`, PAGE_SIZE);
  const now = useNow();
  const changed = () => {
    orders.reload();
    setTick((t) => t + 1);
    onChanged();
  };
  return (
    <section aria-labelledby="orders-title">
      <h2 id="orders-title">Orders</h2>
      <label for="order-status">Show</label>
      <select id="order-status" value={status} onChange={(e) => setStatus((e.currentTarget as HTMLSelectElement).value)}>
        {STATUSES.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      {orders.error && <ErrorNote error={orders.error} />}
      {orders.data?.data.length === 0 && <p>{status ? `No ${status} orders.` : 'No orders yet.'}</p>}
      {orders.data && orders.data.data.length > 0 && (
        <div class="table-wrap">
          <table class="orders">
            <caption>{status ? `${status[0]!.toUpperCase()}${status.slice(1)} orders, newest first` : 'Orders, newest first'}</caption>
            <thead>
              <tr>
                <th scope="col">Buyer</th>
                <th scope="col">Placed</th>
                <th scope="col">Status</th>
                <th scope="col">Total</th>
                <th scope="col">Payment</th>
                <th scope="col">Hold</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {orders.data.data.map((order) => [
                <tr key={order.id} data-order-id={order.id}>
                  <td>
                    {order.buyer.name}
                    <br />
                    <span class="hint">{order.buyer.email}</span>
                  </td>
                  <td>{when(order.createdAt)}</td>
                  <td class={`status status-${order.status}`}>{order.status}</td>
                  <td>
                    {money(order.total, order.currency)} · {places(order)} {places(order) === 1 ? 'place' : 'places'}
                    {order.refundedAmount > 0 && (
                      <>
                        <br />
                        {money(order.refundedAmount, order.currency)} refunded
                      </>
                    )}
                  </td>
                  <td>{paymentOf(order)}</td>
                  <td>{order.status === 'pending' && order.expiresAt ? <Hold expiresAt={order.expiresAt} now={now} /> : '—'}</td>
                  <td>
                    <div class="actions">
                      <button type="button" class="secondary" aria-expanded={open === order.id} onClick={() => setOpen(open === order.id ? null : order.id)}>
                        {open === order.id ? 'Hide details' : 'Details'}
                      </button>
                      {order.status === 'pending' && order.payment.provider === 'manual' && <ConfirmPayment order={order} onDone={changed} />}
                      {order.status === 'pending' && <CancelOrder order={order} onDone={changed} />}
                    </div>
                  </td>
                </tr>,
                // The detail opens under its row, where the reader is looking.
                open === order.id && (
                  <tr key={`${order.id}-detail`} class="detail-row">
                    <td colSpan={7}>
                      <OrderDetail orderId={order.id} version={tick} typeName={typeName} onClose={() => setOpen(null)} onChanged={changed} />
                    </td>
                  </tr>
                ),
              ])}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Orders" paged={orders} />
    </section>
  );
}

/** When a pending order's hold ends, and how long that is from now. */
function Hold({ expiresAt, now }: { expiresAt: string; now: number }) {
  const left = timeLeft(expiresAt, now);
  return (
    <>
      <time dateTime={expiresAt}>{when(expiresAt)}</time>
      <br />
      <span class={left ? 'hold-left' : 'error'}>{left ? `${left} left` : 'hold ended: expiring'}</span>
    </>
  );
}

/** Two steps (the second takes the transfer's reference), so a stray click issues no tickets. */
function ConfirmPayment({ order, onDone }: { order: Order; onDone: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState('');
  if (!confirming) {
    return (
      <button type="button" onClick={() => setConfirming(true)} aria-label={`Confirm payment of ${order.buyer.name}'s order`}>
        Confirm payment
      </button>
    );
  }
  const field = `reference-${order.id}`;
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const reference = String(new FormData(event.currentTarget as HTMLFormElement).get('reference') ?? '').trim();
    setError('');
    try {
      await api(`/orders/${encodeURIComponent(order.id)}/confirm`, { method: 'POST', json: reference ? { reference } : {} });
      onDone();
    } catch (err) {
      setError(failure(err));
    }
  };
  return (
    <div class="confirm-box" role="group" aria-label={`Confirm the payment of ${order.buyer.name}'s order`}>
      <form onSubmit={submit}>
        <p>
          Received {money(order.total, order.currency)} from {order.buyer.name}? The order completes and its tickets are issued.
        </p>
        <label for={field}>Payment reference (optional)</label>
        <input id={field} name="reference" maxLength={200} placeholder="Bank transfer, receipt number…" />
        <div class="actions">
          <button type="submit">Yes, payment received</button>
          <button type="button" class="secondary" onClick={() => setConfirming(false)}>
            Back
          </button>
        </div>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </div>
  );
}

function CancelOrder({ order, onDone }: { order: Order; onDone: () => void }) {
  return (
    <TwoStep
      boxed
      start="Cancel order"
      startLabel={`Cancel ${order.buyer.name}'s order`}
      question={`Cancel this order? Its ${places(order)} held places go back on sale.`}
      questionLabel={`Confirm cancelling ${order.buyer.name}'s order`}
      yes="Yes, cancel order"
      back="Keep it"
      run={() => api(`/orders/${encodeURIComponent(order.id)}/cancel`, { method: 'POST' }).then(onDone)}
    />
  );
}

/** One order, read afresh: its facts, tickets and payments; refunds of a ticket or of an amount. */
function OrderDetail(props: { orderId: string; version: number; typeName: TypeNames; onClose: () => void; onChanged: () => void }) {
  const { orderId, version, typeName, onClose, onChanged } = props;
  const loaded = useApi<Order>(`/orders/${encodeURIComponent(orderId)}`);
  const [outcome, setOutcome] = useState<string | null>(null);
  const order = loaded.data;
  // Read again after any change of the list (a confirmation in its row, a refund here); not on mount, which reads it already.
  const mounted = useRef(false);
  const reload = loaded.reload;
  useEffect(() => {
    if (mounted.current) reload();
    mounted.current = true;
  }, [version, reload]);
  const done = (message: string) => {
    setOutcome(message);
    onChanged();
  };
  return (
    <section class="card order-detail" aria-labelledby="order-detail-title">
      <h3 id="order-detail-title">Order of {order?.buyer.name ?? '…'}</h3>
      {loaded.error && <ErrorNote error={loaded.error} />}
      {order && (
        <>
          <dl class="facts settings-facts">
            <dt>Order id</dt>
            <dd>
              <code>{order.id}</code>
            </dd>
            <dt>Buyer</dt>
            <dd>
              {order.buyer.name} ({order.buyer.email})
            </dd>
            <dt>Status</dt>
            <dd class={`status status-${order.status}`}>{order.status}</dd>
            <dt>Placed · completed</dt>
            <dd>
              {when(order.createdAt)} · {when(order.completedAt)}
            </dd>
            {order.expiresAt && (
              <>
                <dt>Hold ends</dt>
                <dd>{when(order.expiresAt)}</dd>
              </>
            )}
            <dt>Items</dt>
            <dd>
              {order.items.map((item) => `${item.quantity} × ${typeName(item.ticketTypeId)} at ${money(item.unitPrice, order.currency)}`).join(', ')}
              {order.voucher && ` (voucher ${order.voucher.code})`}
            </dd>
            <dt>Total · refunded</dt>
            <dd data-testid="order-money">
              {money(order.total, order.currency)} · {money(order.refundedAmount, order.currency)} refunded
              {order.balanceDue > 0 && ` · ${money(order.balanceDue, order.currency)} due`}
            </dd>
            <dt>Payment</dt>
            <dd>{paymentOf(order)}</dd>
          </dl>
          {outcome && (
            <p class="notice-inline" role="status">
              {outcome}
            </p>
          )}
          <h4>Tickets</h4>
          {order.tickets.length === 0 ? (
            <p>No tickets: {order.status === 'pending' ? 'they are issued when the payment completes the order.' : 'none were issued.'}</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>Tickets of this order</caption>
                <thead>
                  <tr>
                    <th scope="col">Holder</th>
                    <th scope="col">Type</th>
                    <th scope="col">Price</th>
                    <th scope="col">State</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {order.tickets.map((ticket) => (
                    <tr key={ticket.id} data-ticket-id={ticket.id}>
                      <td>
                        {ticket.attendee.name}
                        <br />
                        <span class="hint">{ticket.attendee.email}</span>
                      </td>
                      <td>{typeName(ticket.ticketTypeId)}</td>
                      <td>
                        {money(ticket.price, ticket.currency)}
                        {ticket.refundedAmount > 0 && ` (${money(ticket.refundedAmount, ticket.currency)} refunded)`}
                      </td>
                      <td>{ticket.status === 'cancelled' ? `cancelled ${when(ticket.cancelledAt)}` : ticket.checkedIn ? 'checked in' : 'valid'}</td>
                      <td>{order.status === 'completed' && ticket.status === 'valid' && !ticket.checkedIn && <CancelTicket order={order} ticket={ticket} onDone={done} />}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h4>Payments</h4>
          {order.payments.length === 0 ? (
            <p>No money has moved for this order.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption>Its charge and refunds, oldest first</caption>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Amount</th>
                    <th scope="col">Status</th>
                    <th scope="col">For</th>
                    <th scope="col">Reference</th>
                  </tr>
                </thead>
                <tbody>
                  {order.payments.map((p) => {
                    const ticket = p.ticketId ? order.tickets.find((t) => t.id === p.ticketId) : undefined;
                    return (
                      <tr key={p.id}>
                        <td>{when(p.createdAt)}</td>
                        <td>
                          {p.kind} ({p.provider})
                        </td>
                        <td>{money(p.amount, p.currency)}</td>
                        <td class={p.status === 'failed' ? 'error' : p.status === 'succeeded' ? 'ok' : undefined}>{p.status}</td>
                        <td>{p.ticketId ? `ticket of ${ticket?.attendee.name ?? p.ticketId}` : 'the order'}</td>
                        <td>{p.reference ?? '—'}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
          {order.status === 'completed' && refundable(order) > 0 && <RefundForm key={refundable(order)} order={order} onDone={done} />}
        </>
      )}
      <div class="actions">
        <button type="button" class="secondary" onClick={onClose}>
          Close order
        </button>
      </div>
    </section>
  );
}

/** A ticket cancelled through an order change, which refunds its worth (unless unticked) and says how the refund went. */
function CancelTicket({ order, ticket, onDone }: { order: Order; ticket: Ticket; onDone: (message: string) => void }) {
  const [confirming, setConfirming] = useState(false);
  const [refund, setRefund] = useState(true);
  const [error, setError] = useState<Problem | string>('');
  const worth = money(ticket.price - ticket.refundedAmount, ticket.currency);
  if (!confirming) {
    return (
      <button type="button" class="danger" onClick={() => setConfirming(true)} aria-label={`Cancel and refund the ticket of ${ticket.attendee.name}`}>
        Cancel and refund…
      </button>
    );
  }
  const cancel = async () => {
    setError('');
    try {
      const change = await api<OrderChange>(`/orders/${encodeURIComponent(order.id)}/changes`, { method: 'POST', json: { cancelTickets: [ticket.id], refund } });
      const refunds = change.refunds.map(refundOutcome).join(' ');
      onDone(`The ticket of ${ticket.attendee.name} is cancelled. ${refunds || 'Nothing was refunded.'}`);
    } catch (err) {
      // A refused refund (502) leaves the cancellation standing: the order shows where it stands.
      if (err instanceof Problem && err.code === 'payment_provider_error') onDone(`The ticket of ${ticket.attendee.name} is cancelled, but its refund failed: ${err.detail}`);
      else setError(err instanceof Problem ? err : failure(err));
    }
  };
  return (
    <div class="confirm-box" role="group" aria-label={`Confirm cancelling the ticket of ${ticket.attendee.name}`}>
      <p>Cancel the ticket of {ticket.attendee.name}? Its code stops working and its place goes back on sale.</p>
      <label class="check">
        <input type="checkbox" checked={refund} onChange={(e) => setRefund((e.currentTarget as HTMLInputElement).checked)} /> Refund its price ({worth})
      </label>
      <div class="actions">
        <button type="button" class="danger" onClick={cancel}>
          {refund ? 'Yes, cancel and refund' : 'Yes, cancel without refund'}
        </button>
        <button type="button" class="secondary" onClick={() => setConfirming(false)}>
          Keep it
        </button>
      </div>
      {error && (error instanceof Problem ? <ErrorNote error={error} /> : <p class="error" role="alert">{error}</p>)}
    </div>
  );
}

/** Money back without touching the tickets: an amount up to what is left, and why. */
function RefundForm({ order, onDone }: { order: Order; onDone: (message: string) => void }) {
  const left = refundable(order);
  const [error, setError] = useState<Problem | string>('');
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const amount = minorUnits(String(form.get('amount') ?? ''));
    const reason = String(form.get('reason') ?? '').trim();
    if (amount === null || amount < 1) return setError(`Enter an amount up to ${money(left, order.currency)}.`);
    setError('');
    try {
      const refund = await api<Payment>(`/orders/${encodeURIComponent(order.id)}/refunds`, { method: 'POST', json: { amount, ...(reason ? { reason } : {}) } });
      onDone(refundOutcome(refund));
    } catch (err) {
      if (err instanceof Problem && err.code === 'payment_provider_error') onDone(`The refund failed: ${err.detail}`);
      else setError(err instanceof Problem ? err : failure(err));
    }
  };
  return (
    <form class="refund" onSubmit={submit} aria-labelledby={`refund-${order.id}`}>
      <h4 id={`refund-${order.id}`}>Refund money</h4>
      <p class="hint">The tickets stay valid. Up to {money(left, order.currency)} is left to refund.</p>
      <label for={`refund-amount-${order.id}`}>Amount ({order.currency})</label>
      <input id={`refund-amount-${order.id}`} name="amount" inputMode="decimal" required defaultValue={(left / 100).toFixed(2)} aria-describedby={`refund-error-${order.id}`} />
      <label for={`refund-reason-${order.id}`}>Reason (optional, kept on the refund)</label>
      <input id={`refund-reason-${order.id}`} name="reason" maxLength={500} />
      <div class="actions">
        <button type="submit">Refund</button>
      </div>
      <div id={`refund-error-${order.id}`}>{error && (error instanceof Problem ? <ErrorNote error={error} /> : <p class="error" role="alert">{error}</p>)}</div>
    </form>
  );
}
