// What the fuzzer has learnt about the account from the answers it got: real ids by type (and the
// event each belongs to), ticket codes, cursors, signed result URLs and dashboard sessions, so that
// generated requests sometimes name things that exist and reach the code behind the 404s.

const ID = /^([a-z]{1,8})_[0-9a-z]{26}$/;
const CAP = 64;

export interface ResultLink {
  file: string;
  expires: string;
  signature: string;
}

export interface Session {
  cookie: string;
  csrfToken: string;
}

export class Pool {
  private readonly ids = new Map<string, string[]>();
  private readonly eventOf = new Map<string, string>();
  private readonly codesOf = new Map<string, string>();
  readonly cursors: string[] = [];
  /** Cursors by the operation whose answer held them. */
  readonly cursorsOf = new Map<string, string[]>();
  readonly results: ResultLink[] = [];
  readonly sessions: Session[] = [];
  /** The last ETag each operation answered with, to send back as If-None-Match. */
  readonly etags = new Map<string, string>();

  /** `untouchable`: ids never handed out (the fuzzer's own key, which a revoke would end the run with). */
  constructor(private readonly untouchable = new Set<string>()) {}

  protect(id: string): void {
    this.untouchable.add(id);
    for (const list of this.ids.values()) {
      const at = list.indexOf(id);
      if (at >= 0) list.splice(at, 1);
    }
  }

  /** Ids of one type (`evt`, `tt`...), those of `eventId` first when it is given and has some. */
  of(prefix: string, eventId?: string): string[] {
    const all = this.ids.get(prefix) ?? [];
    if (!eventId) return all;
    const mine = all.filter((id) => this.eventOf.get(id) === eventId);
    return mine.length ? mine : all;
  }

  prefixes(): string[] {
    return [...this.ids.keys()].filter((p) => this.ids.get(p)!.length > 0);
  }

  /** Codes of valid tickets, those of `eventId` first. */
  codes(eventId?: string): string[] {
    const all = [...this.codesOf.entries()];
    const mine = eventId ? all.filter(([ticket]) => this.eventOf.get(ticket) === eventId) : [];
    return (mine.length ? mine : all).map(([, code]) => code);
  }

  /** Takes in everything useful from a JSON answer to `operation`. */
  harvest(body: unknown, operation = ''): void {
    const stack: Array<[unknown, number]> = [[body, 0]];
    while (stack.length) {
      const [node, depth] = stack.pop()!;
      if (!node || typeof node !== 'object' || depth > 8) continue;
      if (Array.isArray(node)) {
        for (const item of node) stack.push([item, depth + 1]);
        continue;
      }
      const record = node as Record<string, unknown>;
      const eventId = typeof record.eventId === 'string' ? record.eventId : undefined;
      for (const [name, value] of Object.entries(record)) {
        if (typeof value === 'string' && (name === 'id' || name.endsWith('Id'))) this.add(value, name === 'eventId' ? undefined : eventId);
      }
      if (typeof record.id === 'string' && record.id.startsWith('tkt_') && typeof record.code === 'string') remember(this.codesOf, record.id, record.code);
      if (typeof record.nextCursor === 'string') {
        push(this.cursors, record.nextCursor);
        const own = this.cursorsOf.get(operation) ?? [];
        this.cursorsOf.set(operation, own);
        push(own, record.nextCursor);
      }
      if (typeof record.resultUrl === 'string') this.addResult(record.resultUrl);
      for (const value of Object.values(record)) stack.push([value, depth + 1]);
    }
  }

  /** A resource that is gone (deleted): its id is no longer handed out. */
  forget(id: string): void {
    const list = this.ids.get(ID.exec(id)?.[1] ?? '');
    if (list?.includes(id)) list.splice(list.indexOf(id), 1);
  }

  add(id: string, eventId?: string): void {
    const match = ID.exec(id);
    if (!match || this.untouchable.has(id)) return;
    const list = this.ids.get(match[1]!) ?? [];
    this.ids.set(match[1]!, list);
    if (!list.includes(id)) push(list, id);
    if (eventId) this.eventOf.set(id, eventId);
  }

  private addResult(url: string): void {
    const parsed = new URL(url, 'http://placeholder');
    const file = parsed.pathname.split('/').pop();
    const expires = parsed.searchParams.get('expires');
    const signature = parsed.searchParams.get('signature');
    if (file && expires && signature && !this.results.some((r) => r.file === file)) push(this.results, { file, expires, signature });
  }

  addSession(setCookie: string | string[] | undefined, csrfToken: unknown): void {
    const cookie = [setCookie ?? []].flat().find((c) => /^montage_session=[^;]+/.test(c));
    if (cookie && typeof csrfToken === 'string') push(this.sessions, { cookie: cookie.split(';')[0]!, csrfToken });
  }
}

function push<T>(list: T[], item: T): void {
  list.push(item);
  if (list.length > CAP) list.shift();
}

function remember(map: Map<string, string>, key: string, value: string): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > CAP) map.delete(map.keys().next().value!);
}
