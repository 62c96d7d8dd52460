import { PDFDocument, type PDFFont, rgb, StandardFonts } from 'pdf-lib';
import QRCode from 'qrcode';
import type { TenantScope } from '../db/tenant.js';
import { notFound } from '../errors.js';
import { findEvent, findTicketType } from './events.repository.js';
import { findTicket } from './tickets.repository.js';

/**
 * A ticket as its holder carries it (docs/events.md, "Tickets as QR and PDF"): the QR code of its
 * code as SVG or PNG, and a printable A6 PDF with the event, the holder, the ticket type, where and
 * when (in the event's time zone), and the QR code.
 */

// Error correction M (15%): a 180-character signed code fits a version 10 symbol, which phones
// and door scanners read off a screen or a print; 4 modules of quiet zone, as the standard asks.
const QR_OPTIONS = { errorCorrectionLevel: 'M' as const, margin: 4 };

async function ticketCode(scope: TenantScope, id: string): Promise<string> {
  const ticket = await findTicket(scope, id);
  if (!ticket) throw notFound('ticket', id);
  return ticket.code;
}

export async function ticketQrSvg(scope: TenantScope, id: string): Promise<string> {
  return QRCode.toString(await ticketCode(scope, id), { ...QR_OPTIONS, type: 'svg' });
}

const qrPng = (code: string, width: number) => QRCode.toBuffer(code, { ...QR_OPTIONS, type: 'png', width });

export async function ticketQrPng(scope: TenantScope, id: string): Promise<Buffer> {
  return qrPng(await ticketCode(scope, id), 512);
}

/** The standard font draws WinAnsi only: a character it lacks is drawn as `?` rather than failing the PDF. */
function drawable(font: PDFFont, text: string): string {
  const known = new Set(font.getCharacterSet());
  return [...text.normalize('NFC')].map((char) => (known.has(char.codePointAt(0)!) ? char : '?')).join('');
}

/** When the event is, in its own time zone, e.g. "Sat, 12 Jun 2027, 19:00 – 22:00 (Europe/Berlin)". */
export function eventTimeText(startsAt: number, endsAt: number, timeZone: string): string {
  const day = new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', day: 'numeric', month: 'short', year: 'numeric' });
  const time = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  const sameDay = day.format(startsAt) === day.format(endsAt);
  const end = sameDay ? time.format(endsAt) : `${day.format(endsAt)}, ${time.format(endsAt)}`;
  return `${day.format(startsAt)}, ${time.format(startsAt)} - ${end} (${timeZone})`;
}

export async function ticketPdf(scope: TenantScope, id: string): Promise<{ pdf: Uint8Array; filename: string }> {
  const ticket = await findTicket(scope, id);
  if (!ticket) throw notFound('ticket', id);
  const [event, type] = await Promise.all([findEvent(scope, ticket.eventId), findTicketType(scope, ticket.eventId, ticket.ticketTypeId)]);
  if (!event || !type) throw notFound('ticket', id);

  const doc = await PDFDocument.create();
  doc.setTitle(`Ticket: ${event.name}`);
  doc.setCreator('Montage');
  doc.setProducer('Montage');
  // A6 portrait, in points.
  const page = doc.addPage([297.64, 419.53]);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const margin = 20;
  const width = page.getWidth() - 2 * margin;
  let y = page.getHeight() - margin;

  /** Writes `text`, cut to one line of the page's width. */
  const line = (text: string, font: PDFFont, size: number, colour = rgb(0, 0, 0)) => {
    let shown = drawable(font, text);
    if (font.widthOfTextAtSize(shown, size) > width) {
      while (shown.length > 1 && font.widthOfTextAtSize(`${shown}...`, size) > width) shown = shown.slice(0, -1);
      shown = `${shown}...`;
    }
    y -= size * 1.25;
    page.drawText(shown, { x: margin, y, size, font, color: colour });
  };

  line(event.name, bold, 16);
  if (event.status === 'cancelled') line('EVENT CANCELLED', bold, 11, rgb(0.7, 0, 0));
  if (ticket.status === 'cancelled') line('TICKET CANCELLED', bold, 11, rgb(0.7, 0, 0));
  line(eventTimeText(event.startsAt, event.endsAt, event.timezone), regular, 9);
  if (event.venue !== null) {
    const venue = JSON.parse(event.venue) as { name: string; address?: string; city?: string; country?: string };
    line(venue.name, regular, 9);
    const place = [venue.address, venue.city, venue.country].filter(Boolean).join(', ');
    if (place) line(place, regular, 9);
  } else if (event.onlineUrl !== null) {
    line(event.onlineUrl, regular, 9);
  }
  y -= 6;
  line(ticket.attendeeName, bold, 12);
  line(type.name, regular, 10);

  const qr = await doc.embedPng(await qrPng(ticket.code, 600));
  const side = Math.min(width, y - margin - 14);
  page.drawImage(qr, { x: margin + (width - side) / 2, y: y - 6 - side, width: side, height: side });
  page.drawText(ticket.id, { x: margin, y: margin - 4, size: 7, font: regular, color: rgb(0.35, 0.35, 0.35) });

  return { pdf: await doc.save(), filename: `ticket-${ticket.id}.pdf` };
}
