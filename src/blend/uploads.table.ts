export interface BlendUploadTable {
  id: string;
  accountId: string;
  bytes: number;
  width: number;
  height: number;
  /** As told by the first bytes (media.ts, `sniffImage`). */
  format: string;
  /** Hex SHA-256 of the stored bytes. */
  sha256: string;
  createdAt: number;
  /** From then on the upload is gone for the client; its bytes stay while an unfinished job uses them. */
  expiresAt: number;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../db/database.js' {
  interface Database {
    blendUploads: BlendUploadTable;
  }
}
