import { useState } from 'preact/hooks';
import { api, failure, minorUnits, money, Problem, when } from '../api.js';
import { ErrorNote, Pager, useNow, usePaged } from '../use-api.js';
import { TwoStep } from '../two-step.js';
import type { TypeNames } from './orders.js';

/** A voucher of GET /v1/events/:id/vouchers (docs/events.md, "Vouchers"). */
interface Voucher {
  id: string;
  code: string;
  ticketTypeId: string | null;
  discountType: 'none' | 'percent' | 'fixed';
  discountValue: number;
  maxUses: number;
  redeemed: number;
  remaining: number;
  reserve: boolean;
  validFrom: string | null;
  validUntil: string | null;
  comment: string | null;
  waitlistEntryId: string | null;
  createdAt: string;
}

const PAGE_SIZE = 20;
/** As many codes as one bulk request takes. */
const MAX_BULK = 1000;

/** Whether a voucher can be used at `now`: started, and not ended. */
function validity(voucher: Voucher, now: number): 'not yet valid' | 'valid' | 'ended' {
  if (voucher.validUntil && Date.parse(voucher.validUntil) <= now) return 'ended';
  if (voucher.validFrom && Date.parse(voucher.validFrom) > now) return 'not yet valid';
  return 'valid';
}

function discount(voucher: Voucher, currency: string): string {
  if (voucher.discountType === 'percent') return `${voucher.discountValue} % off`;
  if (voucher.discountType === 'fixed') return `${money(voucher.discountValue, currency)} off`;
  return 'no discount';
}

/** An event's vouchers, newest first: their uses and validity; create one or many, end one, delete an unused one. */
export function VouchersSection({ eventId, currency, types, typeName }: { eventId: string; currency: string; types: Array<{ id: string; name: string }>; typeName: TypeNames }) {
  const path = `/events/${encodeURIComponent(eventId)}/vouchers`;
  const vouchers = usePaged<Voucher>(path, PAGE_SIZE);
  // Drawn again every 15 s, so a voucher's state follows the clock; judged at the time of drawing.
  useNow(15_000);
  const now = Date.now();
  const [created, setCreated] = useState<Voucher[] | null>(null);
  return (
    <section aria-labelledby="vouchers-title">
      <h2 id="vouchers-title">Vouchers</h2>
      <CreateVouchers
        path={path}
        currency={currency}
        types={types}
        onCreated={(made) => {
          setCreated(made);
          vouchers.reload();
        }}
      />
      {created && (
        <div class="card new-key" role="status">
          <p>
            Created {created.length} {created.length === 1 ? 'voucher' : 'vouchers'}.
          </p>
          <label for="created-codes">{created.length === 1 ? 'Its code' : 'Their codes, one a line'}</label>
          <textarea id="created-codes" readOnly rows={Math.min(created.length, 8)} value={created.map((v) => v.code).join('\n')} />
          <div class="actions">
            <button type="button" class="secondary" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      {vouchers.error && <ErrorNote error={vouchers.error} />}
      {vouchers.data?.data.length === 0 && <p>No vouchers yet.</p>}
      {vouchers.data && vouchers.data.data.length > 0 && (
        <div class="table-wrap">
          <table class="vouchers">
            <caption>Vouchers, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Code</th>
                <th scope="col">For</th>
                <th scope="col">Discount</th>
                <th scope="col">Uses</th>
                <th scope="col">Valid</th>
                <th scope="col">Note</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {vouchers.data.data.map((voucher) => {
                const state = validity(voucher, now);
                return (
                  <tr key={voucher.id} data-voucher-id={voucher.id}>
                    <td>
                      <code>{voucher.code}</code>
                    </td>
                    <td>
                      {voucher.ticketTypeId ? typeName(voucher.ticketTypeId) : 'every ticket type'}
                      {voucher.reserve && (
                        <>
                          <br />
                          <span class="hint">keeps {voucher.remaining} places</span>
                        </>
                      )}
                    </td>
                    <td>{discount(voucher, currency)}</td>
                    <td>
                      <meter min={0} max={voucher.maxUses} value={voucher.redeemed} aria-label={`${voucher.code}: ${voucher.redeemed} of ${voucher.maxUses} used`} /> {voucher.redeemed} of {voucher.maxUses}{' '}
                      used
                    </td>
                    <td>
                      <span class={state === 'ended' ? 'error' : state === 'valid' ? 'ok' : undefined}>{state}</span>
                      <br />
                      <span class="hint">
                        {voucher.validFrom ? `from ${when(voucher.validFrom)}` : 'from its creation'}
                        {voucher.validUntil ? `, until ${when(voucher.validUntil)}` : ', no end'}
                      </span>
                    </td>
                    <td>
                      {voucher.waitlistEntryId ? 'waiting-list offer' : ''}
                      {voucher.waitlistEntryId && voucher.comment ? ' · ' : ''}
                      {voucher.comment}
                    </td>
                    <td>
                      <div class="actions">
                        {state === 'valid' && <EndVoucher path={`${path}/${encodeURIComponent(voucher.id)}`} voucher={voucher} onDone={vouchers.reload} />}
                        {voucher.redeemed === 0 && !voucher.waitlistEntryId && <DeleteVoucher path={`${path}/${encodeURIComponent(voucher.id)}`} voucher={voucher} onDone={vouchers.reload} />}
                      </div>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Vouchers" paged={vouchers} />
    </section>
  );
}

/** A date and time typed in the reader's time zone, as the API's ISO time; absent when left empty. */
const isoOf = (typed: FormDataEntryValue | null) => (typed ? new Date(String(typed)).toISOString() : undefined);

/**
 * One voucher (its code typed or generated), or many with the same settings: `count` generated
 * codes with an optional prefix, or a list of codes (POST .../vouchers/bulk, one transaction).
 */
function CreateVouchers({ path, currency, types, onCreated }: { path: string; currency: string; types: Array<{ id: string; name: string }>; onCreated: (made: Voucher[]) => void }) {
  const [how, setHow] = useState<'one' | 'generated' | 'list'>('one');
  const [discountType, setDiscountType] = useState<Voucher['discountType']>('none');
  const [error, setError] = useState<Problem | string>('');
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    const text = (name: string) => String(form.get(name) ?? '').trim();
    let discountValue: number | null = null;
    if (discountType === 'percent') discountValue = Number(text('discountValue'));
    if (discountType === 'fixed') discountValue = minorUnits(text('discountValue'));
    if (discountType !== 'none' && (discountValue === null || !Number.isInteger(discountValue) || discountValue < 1)) {
      return setError(discountType === 'percent' ? 'Enter a discount of 1 to 100 %.' : `Enter the amount off each ticket, in ${currency}.`);
    }
    const settings = {
      ...(text('ticketTypeId') ? { ticketTypeId: text('ticketTypeId') } : {}),
      discountType,
      ...(discountValue !== null ? { discountValue } : {}),
      maxUses: Number(text('maxUses')),
      reserve: form.get('reserve') === 'on',
      ...(isoOf(form.get('validFrom')) ? { validFrom: isoOf(form.get('validFrom')) } : {}),
      ...(isoOf(form.get('validUntil')) ? { validUntil: isoOf(form.get('validUntil')) } : {}),
      ...(text('comment') ? { comment: text('comment') } : {}),
    };
    const codes = text('codes')
      .split(/\s+/)
      .filter(Boolean);
    setError('');
    try {
      if (how === 'one') onCreated([await api<Voucher>(path, { method: 'POST', json: { ...settings, ...(text('code') ? { code: text('code') } : {}) } })]);
      else {
        const bulk = how === 'generated' ? { count: Number(text('count')), ...(text('codePrefix') ? { codePrefix: text('codePrefix') } : {}) } : { codes };
        onCreated((await api<{ data: Voucher[] }>(`${path}/bulk`, { method: 'POST', json: { ...settings, ...bulk } })).data);
      }
      formElement.reset();
      setHow('one');
      setDiscountType('none');
    } catch (err) {
      setError(err instanceof Problem ? err : failure(err));
    }
  };
  return (
    <details class="card">
      <summary>Create vouchers</summary>
      <form class="voucher-form" onSubmit={submit} aria-label="Create vouchers">
        <fieldset>
          <legend>How many</legend>
          {(
            [
              ['one', 'One voucher'],
              ['generated', 'Many, with generated codes'],
              ['list', 'Many, with my own codes'],
            ] as const
          ).map(([value, label]) => (
            <label key={value} class="check">
              <input type="radio" name="how" value={value} checked={how === value} onChange={() => setHow(value)} /> {label}
            </label>
          ))}
        </fieldset>
        {how === 'one' && (
          <>
            <label for="voucher-code">Code (empty: a generated one)</label>
            <p class="hint" id="voucher-code-hint">
              4 to 64 letters, digits and dashes; buyers may type it in any case.
            </p>
            <input id="voucher-code" name="code" pattern="[A-Za-z0-9\-]{4,64}" maxLength={64} aria-describedby="voucher-code-hint" />
          </>
        )}
        {how === 'generated' && (
          <>
            <label for="voucher-count">How many codes</label>
            <input id="voucher-count" name="count" type="number" min={1} max={MAX_BULK} required defaultValue="10" />
            <label for="voucher-prefix">Code prefix (optional)</label>
            <input id="voucher-prefix" name="codePrefix" pattern="[A-Za-z0-9\-]+" maxLength={32} />
          </>
        )}
        {how === 'list' && (
          <>
            <label for="voucher-codes">Codes, one a line (up to {MAX_BULK})</label>
            <textarea id="voucher-codes" name="codes" rows={5} required />
          </>
        )}
        <label for="voucher-type">For</label>
        <select id="voucher-type" name="ticketTypeId">
          <option value="">Every ticket type</option>
          {types.map((type) => (
            <option key={type.id} value={type.id}>
              {type.name}
            </option>
          ))}
        </select>
        <label for="voucher-discount">Discount</label>
        <select id="voucher-discount" name="discountType" value={discountType} onChange={(e) => setDiscountType((e.currentTarget as HTMLSelectElement).value as Voucher['discountType'])}>
          <option value="none">None (unlocks or reserves only)</option>
          <option value="percent">Percent off each ticket</option>
          <option value="fixed">Amount off each ticket</option>
        </select>
        {discountType !== 'none' && (
          <>
            <label for="voucher-discount-value">{discountType === 'percent' ? 'Percent off (1 to 100)' : `Amount off each ticket (${currency})`}</label>
            <input id="voucher-discount-value" name="discountValue" inputMode="decimal" required />
          </>
        )}
        <label for="voucher-uses">Uses (places it gives, in all)</label>
        <input id="voucher-uses" name="maxUses" type="number" min={1} max={1_000_000} required defaultValue="1" />
        <label class="check">
          <input type="checkbox" name="reserve" /> Keep its places for it (needs one ticket type; the places must be free)
        </label>
        <label for="voucher-from">Valid from (optional)</label>
        <input id="voucher-from" name="validFrom" type="datetime-local" />
        <label for="voucher-until">Valid until (optional)</label>
        <input id="voucher-until" name="validUntil" type="datetime-local" />
        <label for="voucher-comment">Comment (optional)</label>
        <input id="voucher-comment" name="comment" maxLength={500} />
        {error && (error instanceof Problem ? <ErrorNote error={error} /> : <p class="error" role="alert">{error}</p>)}
        <div class="actions">
          <button type="submit">{how === 'one' ? 'Create voucher' : 'Create vouchers'}</button>
        </div>
      </form>
    </details>
  );
}

/** Ends a voucher now (PATCH validUntil): it keeps its history, and its unused reserved places go back on sale. */
function EndVoucher({ path, voucher, onDone }: { path: string; voucher: Voucher; onDone: () => void }) {
  const [error, setError] = useState('');
  const end = async () => {
    try {
      await api(path, { method: 'PATCH', json: { validUntil: new Date().toISOString() } });
      onDone();
    } catch (err) {
      setError(failure(err));
    }
  };
  return (
    <>
      <button type="button" class="secondary" onClick={end} aria-label={`End voucher ${voucher.code} now`}>
        End now
      </button>
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
    </>
  );
}

/** Two steps; only an unused voucher can be deleted (the API refuses others with voucher_in_use). */
function DeleteVoucher({ path, voucher, onDone }: { path: string; voucher: Voucher; onDone: () => void }) {
  return (
    <TwoStep
      start="Delete…"
      startLabel={`Delete voucher ${voucher.code}`}
      question={`Delete ${voucher.code}?`}
      questionLabel={`Confirm deleting voucher ${voucher.code}`}
      yes="Yes, delete"
      back="Keep it"
      run={() => api(path, { method: 'DELETE' }).then(onDone)}
    />
  );
}
