/** The scanner's memory on the device (IndexedDB): its pairing, the event's offline data, every scan. */
import { type DBSchema, type IDBPDatabase, openDB } from 'idb';
import type { CheckinList, Direction } from './rules.js';
import type { RevocationList, SigningKey } from './verify.js';

export interface Pairing {
  eventId: string;
  /** Null: the list-less check-in of the API. */
  listId: string | null;
  /** A checkin-scoped API key: sent only as the Authorization of this origin's API. */
  key: string;
  pairedAt: string;
}

/** GET /v1/events/:id/checkin/offline. */
export interface OfflineData {
  object: 'checkin_offline_data';
  eventId: string;
  generatedAt: string;
  event: { id: string; name: string; timezone: string; startsAt: string; endsAt: string; venue?: unknown };
  keys: SigningKey[];
  revocations: RevocationList;
  ticketTypes: Array<{ id: string; name: string }>;
  checkinLists?: CheckinList[];
}

export interface StoredOffline {
  data: OfflineData;
  etag: string | null;
  fetchedAt: string;
}

export type Outcome = 'admitted' | 'refused' | 'conflict' | 'duplicate';

export interface ConflictInfo {
  keptScanId: string;
  keptScannedAt: string;
  /** Null for an admission made online, through POST /checkin (no device id). */
  keptDeviceId: string | null;
}

/** GET /v1/events/:id/checkin-lists/:listId/conflicts: one scan that became a conflict. */
export interface ServerConflict {
  object: 'checkin_conflict';
  id: string;
  listId: string;
  scanId: string;
  ticketId: string;
  scannedAt: string;
  deviceId: string | null;
  kept: ConflictInfo;
  conflictedAt: string;
}

/** The list's conflicts that touch this device's scans, as last read from the server. */
export interface KnownConflicts {
  listId: string;
  conflicts: ServerConflict[];
}

/** A conflict as the page shows it. */
export interface ConflictView {
  /** The scan that became the conflict (the later admission), and the admission kept instead. */
  scanId: string;
  ticketId: string | null;
  scannedAt: string;
  deviceId: string | null;
  kept: ConflictInfo | null;
  /** conflict: this device's admission was the later one; kept: this device's was kept over another door's. */
  side: 'conflict' | 'kept';
  attendeeName: string | null;
  ticketTypeName: string | null;
}

/** One scan: the queue entry of the contract, and what the server said of it once it knows. */
export interface ScanRecord {
  scanId: string;
  /** The event the device was paired with: only its scans are uploaded with its key. */
  eventId: string;
  code: string;
  listId: string | null;
  direction: Direction;
  scannedAt: string;
  localResult: 'admitted' | 'refused';
  localReason: string | null;
  /** queued: not yet on the server; done: the server has answered (directly or through a sync). */
  state: 'queued' | 'done';
  /** From the code, when it is a signed one or the server named it. */
  ticketId: string | null;
  outcome: Outcome | null;
  reason: string | null;
  attendeeName: string | null;
  ticketTypeName: string | null;
  conflict: ConflictInfo | null;
}

/** The list's inside count as the server last gave it, and this device's online admissions since. */
export interface InsideCount {
  listId: string;
  value: number;
  at: string;
}

type Setting = 'pairing' | 'offline' | 'deviceId' | 'inside' | 'conflicts';

interface ScannerDb extends DBSchema {
  settings: { key: string; value: unknown };
  scans: { key: string; value: ScanRecord; indexes: { byState: string; byTicket: [string, string] } };
}

export class Store {
  private constructor(private readonly db: IDBPDatabase<ScannerDb>) {}

  static async open(name = 'montage-scanner'): Promise<Store> {
    const db = await openDB<ScannerDb>(name, 1, {
      upgrade(database) {
        database.createObjectStore('settings');
        const scans = database.createObjectStore('scans', { keyPath: 'scanId' });
        scans.createIndex('byState', 'state');
        scans.createIndex('byTicket', ['listKey', 'ticketId']);
      },
    });
    return new Store(db);
  }

  async get<T>(name: Setting): Promise<T | undefined> {
    return (await this.db.get('settings', name)) as T | undefined;
  }

  async set(name: Setting, value: unknown): Promise<void> {
    await this.db.put('settings', value, name);
  }

  /** A new pairing forgets the previous event's data and scans that were already uploaded. */
  async pair(pairing: Pairing): Promise<void> {
    const tx = this.db.transaction(['settings', 'scans'], 'readwrite');
    const settings = tx.objectStore('settings');
    const previous = (await settings.get('pairing')) as Pairing | undefined;
    if (previous && previous.eventId !== pairing.eventId) {
      await settings.delete('offline');
      await settings.delete('inside');
      await settings.delete('conflicts');
      let cursor = await tx.objectStore('scans').index('byState').openCursor('done');
      while (cursor) {
        await cursor.delete();
        cursor = await cursor.continue();
      }
    }
    await settings.put(pairing, 'pairing');
    await tx.done;
  }

  async forget(): Promise<void> {
    const tx = this.db.transaction('settings', 'readwrite');
    await tx.store.delete('pairing');
    await tx.store.delete('offline');
    await tx.store.delete('inside');
    await tx.store.delete('conflicts');
    await tx.done;
  }

  /** This device's id for the sync (1..64 characters), made once. */
  async deviceId(): Promise<string> {
    const existing = await this.get<string>('deviceId');
    if (existing) return existing;
    const id = `door-${crypto.randomUUID()}`;
    await this.set('deviceId', id);
    return id;
  }

  async putScan(scan: ScanRecord): Promise<void> {
    await this.db.put('scans', { ...scan, listKey: scan.listId ?? '' } as ScanRecord);
  }

  async scan(scanId: string): Promise<ScanRecord | undefined> {
    return this.db.get('scans', scanId);
  }

  /** The event's queued scans, earliest first, as the sync wants them. */
  async queued(eventId: string, limit: number): Promise<ScanRecord[]> {
    const all = await this.db.getAllFromIndex('scans', 'byState', 'queued');
    return all
      .filter((s) => s.eventId === eventId)
      .sort((a, b) => a.scannedAt.localeCompare(b.scannedAt))
      .slice(0, limit);
  }

  /** Every scan of `ticketId` on this list, oldest first. */
  async scansOf(listId: string | null, ticketId: string): Promise<ScanRecord[]> {
    const scans = await this.db.getAllFromIndex('scans', 'byTicket', [listId ?? '', ticketId]);
    return scans.sort((a, b) => a.scannedAt.localeCompare(b.scannedAt));
  }

  /** The latest scans that ended as conflicts, newest first. */
  async conflicts(limit: number): Promise<ScanRecord[]> {
    const done = await this.db.getAllFromIndex('scans', 'byState', 'done');
    return done.filter((s) => s.outcome === 'conflict').sort((a, b) => b.scannedAt.localeCompare(a.scannedAt)).slice(0, limit);
  }
}
