/** An event's Ed25519 key that signs its tickets' codes (src/events/ticket-codes.ts). */
export interface SigningKeyTable {
  /** `sk_...`: orders the keys by creation (their list pages by it); the API names a key by its kid. */
  id: string;
  accountId: string;
  eventId: string;
  /** 8 lowercase hex characters, unique within the event. */
  kid: string;
  /** base64url of the raw 32-byte public key. */
  publicKey: string;
  /** PKCS #8 DER, base64. Never leaves the server. */
  privateKey: string;
  /** `active` (signs new codes; one per event) | `retiring` (its codes still verify) | `retired` (its codes are refused) */
  status: string;
  createdAt: number;
  retiredAt: number | null;
}

/** A signed code that no longer admits its ticket: the serials of the revocation list. */
export interface TicketRevocationTable {
  accountId: string;
  eventId: string;
  /** base64url of the code's 8 serial bytes. */
  serial: string;
  ticketId: string;
  kid: string;
  /** `cancelled` | `transferred` | `reissued` */
  reason: string;
  createdAt: number;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../db/database.js' {
  interface Database {
    signingKeys: SigningKeyTable;
    ticketRevocations: TicketRevocationTable;
  }
}
