/**
 * The door: decides each scan (the server when it answers, the device alone when it does not),
 * keeps every scan in the store, uploads the queue through /checkin/sync, and keeps the event's
 * offline data fresh. The page (main.ts) only shows what this reports.
 */
import { type CheckinList, decide, type Direction, notACode } from './rules.js';
import type { ConflictInfo, ConflictView, InsideCount, KnownConflicts, OfflineData, Outcome, Pairing, ScanRecord, ServerConflict, Store, StoredOffline } from './store.js';
import { isSignedCode, type Verdict, Verifier, verifyRevocations } from './verify.js';

/** The contract's cap on one sync request. */
export const SYNC_BATCH = 1000;
const REFRESH_EVERY_MS = 60_000;
const MAX_BACKOFF_MS = 60_000;
const CHECKIN_TIMEOUT_MS = 4000;
/** How many of the list's latest conflicts the door reads (one page, newest first) and shows. */
const CONFLICTS_SHOWN = 20;
const CONFLICTS_READ = 100;

export interface ScanResult {
  scan: ScanRecord;
  /** Whether the server decided (true) or the device alone (false, queued for upload). */
  byServer: boolean;
}

export interface DoorState {
  pairing: Pairing | null;
  offline: StoredOffline | null;
  list: CheckinList | null;
  online: boolean;
  queued: number;
  inside: number | null;
  /** A problem worth showing (the key refused, door data that failed its check, …). */
  problem: string | null;
  /** Conflicts touching this device's scans, newest first: its own later admissions, and its admissions kept over another door's. */
  conflicts: ConflictView[];
}

/** An answer that is not the server's judgement (no network, a gateway, an overloaded server): the door decides alone. */
class Unreachable extends Error {}

interface SyncAnswer {
  results: Array<{
    scanId: string;
    outcome: Outcome;
    reason?: string;
    checkinId?: string;
    ticketId?: string;
    attendee?: { name: string | null };
    ticketTypeName?: string;
    conflict?: ConflictInfo;
  }>;
  list?: CheckinList;
}

export class Door {
  private verifier: Verifier | null = null;
  private backoffMs = 1000;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private refreshTimer: ReturnType<typeof setInterval> | null = null;
  private syncing: Promise<void> | null = null;
  /** The server's inside count as last heard, and the admissions it has counted since. */
  private insideBase: number | null = null;
  readonly state: DoorState = { pairing: null, offline: null, list: null, online: navigator.onLine, queued: 0, inside: null, problem: null, conflicts: [] };

  constructor(
    private readonly store: Store,
    private readonly changed: () => void,
  ) {}

  async start(): Promise<void> {
    this.state.pairing = (await this.store.get<Pairing>('pairing')) ?? null;
    const stored = (await this.store.get<StoredOffline>('offline')) ?? null;
    if (stored) await this.useOffline(stored, false);
    await this.recount(true);
    addEventListener('online', () => {
      this.state.online = true;
      this.backoffMs = 1000;
      this.changed();
      void this.refresh().then(() => this.sync());
    });
    addEventListener('offline', () => {
      this.state.online = false;
      this.changed();
    });
    this.refreshTimer = setInterval(() => {
      if (this.state.pairing && navigator.onLine) void this.refresh().then(() => this.sync());
    }, REFRESH_EVERY_MS);
    if (this.state.pairing) {
      await this.refresh();
      void this.sync();
    }
  }

  stop(): void {
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  async pair(pairing: Pairing): Promise<void> {
    await this.store.pair(pairing);
    this.state.pairing = pairing;
    this.state.problem = null;
    const stored = (await this.store.get<StoredOffline>('offline')) ?? null;
    this.verifier = null;
    this.state.offline = null;
    this.state.list = null;
    this.insideBase = null;
    if (stored) await this.useOffline(stored, false);
    await this.recount(true);
    await this.refresh();
    void this.sync();
  }

  async unpair(): Promise<void> {
    await this.store.forget();
    Object.assign(this.state, { pairing: null, offline: null, list: null, inside: null, problem: null, conflicts: [], queued: 0 });
    this.verifier = null;
    this.insideBase = null;
    this.changed();
  }

  private async api(path: string, init: RequestInit = {}, timeoutMs = 30_000): Promise<Response> {
    const pairing = this.state.pairing;
    if (!pairing) throw new Error('not paired');
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${pairing.key}`);
    headers.set('accept', 'application/json');
    if (init.body) headers.set('content-type', 'application/json');
    let res: Response;
    try {
      res = await fetch(`/v1/events/${encodeURIComponent(pairing.eventId)}${path}`, { ...init, headers, cache: 'no-store', signal: AbortSignal.timeout(timeoutMs) });
    } catch {
      throw new Unreachable('network');
    }
    if (res.status >= 500 || res.status === 429 || res.status === 408) throw new Unreachable(String(res.status));
    this.setOnline(true);
    return res;
  }

  private setOnline(online: boolean) {
    if (this.state.online !== online) {
      this.state.online = online;
      this.changed();
    }
  }

  private async problemOf(res: Response): Promise<{ code: string; detail: string }> {
    const body = (await res.json().catch(() => ({}))) as { code?: string; detail?: string };
    return { code: body.code ?? `http_${res.status}`, detail: body.detail ?? res.statusText };
  }

  /** Downloads the event's offline data (If-None-Match: unchanged data is a 304). */
  async refresh(): Promise<void> {
    if (!this.state.pairing) return;
    const etag = this.state.offline?.etag;
    let res: Response;
    try {
      res = await this.api('/checkin/offline', { headers: etag ? { 'if-none-match': etag } : {} });
    } catch (err) {
      if (err instanceof Unreachable) return this.setOnline(false);
      throw err;
    }
    if (res.status === 304) return;
    if (!res.ok) {
      const { code, detail } = await this.problemOf(res);
      this.state.problem =
        res.status === 401 || res.status === 403 ? `The scanner's key was refused (${code}): pair again from the dashboard.` : `Could not download the door data: ${detail}`;
      this.changed();
      return;
    }
    const data = (await res.json()) as OfflineData;
    await this.useOffline({ data, etag: res.headers.get('etag'), fetchedAt: new Date().toISOString() }, true);
  }

  /** Takes offline data into use once its revocation list has passed its signature check. */
  private async useOffline(stored: StoredOffline, fresh: boolean): Promise<void> {
    const { data } = stored;
    const pairing = this.state.pairing;
    if (!pairing || data.eventId !== pairing.eventId) return;
    if (!(await verifyRevocations(data.revocations, data.keys, data.eventId))) {
      this.state.problem = 'The door data failed its signature check; the scanner keeps its previous copy.';
      this.changed();
      return;
    }
    this.verifier = await Verifier.create(data.eventId, data.keys, data.revocations.serials);
    this.state.offline = stored;
    this.state.list = data.checkinLists?.find((l) => l.id === pairing.listId) ?? null;
    if (pairing.listId && !this.state.list) this.state.problem = `The check-in list ${pairing.listId} is not in this event's door data.`;
    else if (fresh) this.state.problem = null;
    if (this.state.list && fresh) await this.setInside(this.state.list.counts.inside);
    else if (this.state.list && this.insideBase === null) {
      // The count kept after the last online admissions, when it is newer than this copy of the data.
      const kept = await this.store.get<InsideCount>('inside');
      this.insideBase = kept && kept.listId === this.state.list.id && kept.at > stored.fetchedAt ? kept.value : this.state.list.counts.inside;
    }
    if (fresh) await this.store.set('offline', stored);
    await this.recount();
  }

  private async setInside(value: number): Promise<void> {
    this.insideBase = value;
    const listId = this.state.pairing?.listId;
    if (listId) await this.store.set('inside', { listId, value, at: new Date().toISOString() } satisfies InsideCount);
  }

  /** The queue length and the inside count: the server's last count and this device's scans it has not seen yet. */
  private async recount(withConflicts = false): Promise<void> {
    const queued = this.state.pairing ? await this.store.queued(this.state.pairing.eventId, Number.MAX_SAFE_INTEGER) : [];
    this.state.queued = queued.length;
    if (this.insideBase !== null) {
      let delta = 0;
      for (const scan of queued) {
        if (scan.localResult === 'admitted' && scan.listId === this.state.pairing?.listId) delta += scan.direction === 'entry' ? 1 : -1;
      }
      this.state.inside = Math.max(0, this.insideBase + delta);
    }
    // Conflicts come only from the server (an upload's answers, its conflicts list): read again after those, not after every scan.
    if (withConflicts) this.state.conflicts = await this.conflictViews();
    this.changed();
  }

  private typeName(ticketTypeId: string | null | undefined): string | null {
    return this.state.offline?.data.ticketTypes.find((t) => t.id === ticketTypeId)?.name ?? null;
  }

  /** One scan, from the camera or typed. */
  async scan(raw: string, direction: Direction): Promise<ScanResult> {
    const pairing = this.state.pairing;
    if (!pairing) throw new Error('not paired');
    const foreign = notACode(raw);
    if (foreign) throw new Error(foreign);
    const code = raw.trim();
    const scannedAt = new Date().toISOString();
    const scan: ScanRecord = {
      scanId: crypto.randomUUID(),
      eventId: pairing.eventId,
      code,
      listId: pairing.listId,
      direction,
      scannedAt,
      localResult: 'refused',
      localReason: null,
      state: 'queued',
      ticketId: null,
      outcome: null,
      reason: null,
      attendeeName: null,
      ticketTypeName: null,
      conflict: null,
    };
    // A code's fields are believed only once its signature is checked.
    const verdict = this.verifier && isSignedCode(code) ? await this.verifier.verify(code, Math.floor(Date.now() / 1000)) : null;
    const ticket = verdict?.ok ? verdict.ticket : verdict?.ticket;
    if (ticket) {
      scan.ticketId = ticket.ticketId;
      scan.ticketTypeName = this.typeName(ticket.ticketTypeId);
    }

    if (navigator.onLine) {
      try {
        await this.askServer(scan);
        await this.store.putScan(scan);
        await this.recount();
        return { scan, byServer: true };
      } catch (err) {
        if (!(err instanceof Unreachable)) throw err;
        this.setOnline(false);
      }
    }
    await this.decideAlone(scan, verdict);
    await this.store.putScan(scan);
    await this.recount();
    this.scheduleSync(0);
    return { scan, byServer: false };
  }

  /** POST /checkin with the scan's id: the server's answer is final. */
  private async askServer(scan: ScanRecord): Promise<void> {
    const body = { code: scan.code, direction: scan.direction, scanId: scan.scanId, checkedInAt: scan.scannedAt, ...(scan.listId ? { listId: scan.listId } : {}) };
    // A door cannot wait: past CHECKIN_TIMEOUT_MS the device decides, and the queued scan (same
    // scanId) is answered once by the server, whether or not this request reached it.
    const res = await this.api('/checkin', { method: 'POST', body: JSON.stringify(body) }, CHECKIN_TIMEOUT_MS);
    if (res.status === 401 || res.status === 403) {
      const { code } = await this.problemOf(res);
      this.state.problem = `The scanner's key was refused (${code}): pair again from the dashboard.`;
      // Not a judgement of the ticket: the door decides alone and keeps the scan for later.
      throw new Unreachable(code);
    }
    scan.state = 'done';
    if (res.ok) {
      const checkin = (await res.json()) as { ticketId: string; attendee?: { name?: string | null }; ticket?: { ticketTypeId?: string } };
      scan.outcome = 'admitted';
      scan.localResult = 'admitted';
      scan.ticketId = checkin.ticketId;
      scan.attendeeName = checkin.attendee?.name ?? null;
      scan.ticketTypeName = this.typeName(checkin.ticket?.ticketTypeId) ?? scan.ticketTypeName;
      if (this.insideBase !== null && scan.listId) await this.setInside(this.insideBase + (scan.direction === 'entry' ? 1 : -1));
      return;
    }
    const problem = (await res.json().catch(() => ({}))) as { code?: string; ticketId?: string };
    scan.outcome = 'refused';
    scan.reason = problem.code ?? `http_${res.status}`;
    scan.localReason = scan.reason;
    scan.ticketId ??= problem.ticketId ?? null;
  }

  /** No server: the verifier and this device's own history decide; the scan waits in the queue. */
  private async decideAlone(scan: ScanRecord, verdict: Verdict | null): Promise<void> {
    scan.state = 'queued';
    if (!verdict) {
      scan.localResult = 'refused';
      // Older unsigned codes, and any code before the door data arrived, only the server can check.
      scan.localReason = this.verifier && scan.code.startsWith('M1') ? 'invalid_code' : 'needs_server';
      return;
    }
    const earlier = verdict.ok ? await this.store.scansOf(scan.listId, verdict.ticket.ticketId) : [];
    const admitted = earlier
      // Whoever this door let through (even a later conflict) is in; the server's admissions too.
      .filter((s) => s.localResult === 'admitted' || s.outcome === 'admitted')
      .map((s) => ({ direction: s.direction, scannedAt: s.scannedAt }));
    const decision = decide(verdict, this.state.list, admitted, scan.direction, new Date());
    scan.localResult = decision.result;
    scan.localReason = decision.result === 'refused' ? decision.reason : null;
  }

  private scheduleSync(delayMs: number) {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    // Without a network the browser's `online` event starts the upload.
    if (!navigator.onLine) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.sync();
    }, delayMs);
  }

  /**
   * Uploads the queue in batches of SYNC_BATCH; on no answer, tries again later, waiting longer
   * each time. Then reads the list's conflicts: another door's later upload may have made one of
   * this door's admissions a conflict, or kept it over theirs (this runs on the minute refresh too).
   */
  sync(): Promise<void> {
    this.syncing ??= this.upload()
      .then(() => this.readConflicts())
      .finally(() => {
        this.syncing = null;
      });
    return this.syncing;
  }

  /**
   * GET /checkin-lists/:listId/conflicts (newest first): keeps those that touch this device, by
   * its device id (synced scans) or its scan ids (online scans carry none), and marks this
   * device's scans that the server turned into conflicts.
   */
  private async readConflicts(): Promise<void> {
    const pairing = this.state.pairing;
    if (!pairing?.listId || !navigator.onLine) return;
    let res: Response;
    try {
      res = await this.api(`/checkin-lists/${encodeURIComponent(pairing.listId)}/conflicts?limit=${CONFLICTS_READ}`);
    } catch (err) {
      if (err instanceof Unreachable) return this.setOnline(false);
      throw err;
    }
    if (!res.ok) {
      const { code, detail } = await this.problemOf(res);
      this.state.problem = `Could not read the door's conflicts (${code}): ${detail}`;
      this.changed();
      return;
    }
    const page = (await res.json()) as { data: ServerConflict[] };
    if (this.state.pairing !== pairing) return;
    const deviceId = await this.store.deviceId();
    const touching: ServerConflict[] = [];
    for (const conflict of page.data) {
      const mine = await this.store.scan(conflict.scanId);
      const keptHere = conflict.kept.keptDeviceId === deviceId || (await this.store.scan(conflict.kept.keptScanId)) !== undefined;
      if (!mine && conflict.deviceId !== deviceId && !keptHere) continue;
      touching.push(conflict);
      if (mine && mine.outcome !== 'conflict') {
        // Admitted when uploaded, displaced since by another door's earlier scan.
        mine.outcome = 'conflict';
        mine.reason = 'conflict';
        mine.conflict = conflict.kept;
        await this.store.putScan(mine);
      }
    }
    await this.store.set('conflicts', { listId: pairing.listId, conflicts: touching } satisfies KnownConflicts);
    await this.recount(true);
  }

  /** The conflicts to show: those last read from the server, and this device's scans its sync answers called conflicts. */
  private async conflictViews(): Promise<ConflictView[]> {
    const listId = this.state.pairing?.listId;
    const known = await this.store.get<KnownConflicts>('conflicts');
    const views: ConflictView[] = [];
    const seen = new Set<string>();
    for (const conflict of known && known.listId === listId ? known.conflicts : []) {
      const mine = await this.store.scan(conflict.scanId);
      const kept = mine ? undefined : await this.store.scan(conflict.kept.keptScanId);
      const local = mine ?? kept;
      seen.add(conflict.scanId);
      views.push({
        scanId: conflict.scanId,
        ticketId: conflict.ticketId,
        scannedAt: conflict.scannedAt,
        deviceId: conflict.deviceId,
        kept: conflict.kept,
        side: mine ? 'conflict' : 'kept',
        attendeeName: local?.attendeeName ?? null,
        ticketTypeName: local?.ticketTypeName ?? null,
      });
    }
    for (const scan of await this.store.conflicts(CONFLICTS_SHOWN)) {
      if (seen.has(scan.scanId) || (listId && scan.listId !== listId)) continue;
      views.push({ scanId: scan.scanId, ticketId: scan.ticketId, scannedAt: scan.scannedAt, deviceId: null, kept: scan.conflict, side: 'conflict', attendeeName: scan.attendeeName, ticketTypeName: scan.ticketTypeName });
    }
    return views.sort((a, b) => b.scannedAt.localeCompare(a.scannedAt)).slice(0, CONFLICTS_SHOWN);
  }

  private async upload(): Promise<void> {
    const pairing = this.state.pairing;
    if (!pairing || !navigator.onLine) return;
    const deviceId = await this.store.deviceId();
    // Stops when the device is unpaired or paired again meanwhile: the next pairing uploads its own.
    while (this.state.pairing === pairing) {
      const batch = await this.store.queued(pairing.eventId, SYNC_BATCH);
      if (batch.length === 0) return;
      let res: Response;
      try {
        const scans = batch.map((s) => ({
          scanId: s.scanId,
          code: s.code,
          ...(s.listId ? { listId: s.listId } : {}),
          direction: s.direction,
          scannedAt: s.scannedAt,
          localResult: s.localResult,
        }));
        res = await this.api('/checkin/sync', { method: 'POST', body: JSON.stringify({ deviceId, scans }) });
      } catch (err) {
        if (!(err instanceof Unreachable)) throw err;
        this.setOnline(false);
        this.scheduleSync(this.backoffMs);
        this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
        return;
      }
      if (!res.ok) {
        const { code, detail } = await this.problemOf(res);
        this.state.problem = `The queued scans could not be uploaded (${code}): ${detail}`;
        this.changed();
        this.scheduleSync(MAX_BACKOFF_MS);
        return;
      }
      this.backoffMs = 1000;
      const answer = (await res.json()) as SyncAnswer;
      const sent = new Set(batch.map((s) => s.scanId));
      let answered = 0;
      for (const result of answer.results) {
        const scan = sent.has(result.scanId) ? await this.store.scan(result.scanId) : undefined;
        if (!scan) continue;
        answered++;
        scan.state = 'done';
        scan.outcome = result.outcome;
        scan.reason = result.reason ?? (result.outcome === 'conflict' ? 'conflict' : null);
        scan.ticketId = result.ticketId ?? scan.ticketId;
        scan.attendeeName = result.attendee?.name ?? scan.attendeeName;
        scan.ticketTypeName = result.ticketTypeName ?? scan.ticketTypeName;
        scan.conflict = result.conflict ?? null;
        await this.store.putScan(scan);
      }
      if (answer.list && answer.list.id === pairing.listId) {
        this.state.list = answer.list;
        await this.setInside(answer.list.counts.inside);
      }
      await this.recount(true);
      if (answered < batch.length) {
        // Scans the server did not answer stay queued; asking again at once would loop.
        this.state.problem = `The server answered ${answered} of ${batch.length} uploaded scans; the rest stay queued.`;
        this.changed();
        this.scheduleSync(MAX_BACKOFF_MS);
        return;
      }
    }
  }
}
