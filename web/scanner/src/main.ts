/** The scanner page: pairing from the URL fragment, the camera and the typed code, and what the door decided. */
import { Camera } from './camera.js';
import { Door } from './door.js';
import { type Direction, notACode, refusalText } from './rules.js';
import { type Pairing, type ScanRecord, Store } from './store.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const EVENT_ID = /^evt_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const LIST_ID = /^cl_[0-7][0-9a-hjkmnp-tv-z]{25}$/;

const INCOMPLETE = 'The pairing link is incomplete: open it again from the dashboard.';
const NO_LIST = "The pairing link names no check-in list, and the scanner checks tickets through one: make a new link with the dashboard's Scanner… action on the event's page.";

/** #event=evt_…&list=cl_…&key=… (the fragment never reaches a server or its logs); null when absent, or why the link is refused. */
function pairingFromFragment(): Pairing | { refused: string } | null {
  if (!location.hash || location.hash === '#') return null;
  const params = new URLSearchParams(location.hash.slice(1));
  const eventId = params.get('event') ?? '';
  const listId = params.get('list') ?? '';
  const key = params.get('key') ?? '';
  if (!EVENT_ID.test(eventId) || key.length < 8 || key.length > 200 || (listId !== '' && !LIST_ID.test(listId))) return { refused: INCOMPLETE };
  if (listId === '') return { refused: NO_LIST };
  return { eventId, listId, key, pairedAt: new Date().toISOString() };
}

/** The address bar loses the fragment, so the key is neither bookmarked, shared nor left in history. */
const clearFragment = () => history.replaceState(null, '', location.pathname + location.search);

function direction(): Direction {
  return ($<HTMLInputElement>('direction').querySelector<HTMLInputElement>('input:checked')?.value as Direction) ?? 'entry';
}

let pageProblem: string | null = null;

function render(door: Door) {
  const { state } = door;
  const paired = state.pairing !== null;
  $('unpaired').hidden = paired;
  $('paired').hidden = !paired;
  const data = state.offline?.data;
  $('event-name').textContent = data?.event.name ?? (!paired ? 'Scanner' : state.online ? 'Loading the door data…' : 'No door data on this device yet');
  $('list-name').textContent = state.list ? state.list.name : paired && !state.pairing?.listId ? 'Every ticket' : '';
  const network = $('network');
  network.textContent = state.online ? 'Online' : 'Offline';
  network.className = `pill ${state.online ? 'pill-online' : 'pill-offline'}`;
  $('queued').textContent = `${state.queued} queued`;
  $('queued').className = `pill ${state.queued > 0 ? 'pill-queued' : ''}`;
  $('inside').textContent = state.inside === null ? '—' : String(state.inside);
  $('direction').hidden = !state.list?.scanExits;
  const problem = pageProblem ?? state.problem;
  $('problem').hidden = !problem;
  $('problem').textContent = problem ?? '';

  const box = $('conflicts-box');
  box.hidden = state.conflicts.length === 0;
  const time = (at: string) => new Date(at).toLocaleTimeString();
  const device = (id: string | null) => (id ? `door ${id.replace(/^door-/, '').slice(0, 8)}` : 'an online scan');
  $('conflicts').replaceChildren(
    ...state.conflicts.map((conflict) => {
      const li = document.createElement('li');
      li.dataset.side = conflict.side;
      const who = `${conflict.attendeeName ?? conflict.ticketId ?? 'A ticket'} (${conflict.ticketTypeName ?? 'ticket'})`;
      li.textContent =
        conflict.side === 'conflict'
          ? `${who}, admitted here at ${time(conflict.scannedAt)}: a conflict.${conflict.kept ? ` Kept: the scan at ${time(conflict.kept.keptScannedAt)} on ${device(conflict.kept.keptDeviceId)}.` : ''}`
          : `${who}, admitted here${conflict.kept ? ` at ${time(conflict.kept.keptScannedAt)}` : ''}: kept. Also admitted at ${time(conflict.scannedAt)} by ${device(conflict.deviceId)}: a conflict.`;
      return li;
    }),
  );
}

function show(scan: ScanRecord, byServer: boolean) {
  const admitted = (scan.outcome ?? scan.localResult) === 'admitted';
  const result = $('result');
  result.className = `result ${admitted ? 'admitted' : 'refused'}`;
  $('verdict').textContent = admitted ? (scan.direction === 'exit' ? 'Exit' : 'Admit') : 'Refused';
  const reason = admitted ? (byServer ? 'Checked by the server' : 'Checked on this device, queued for upload') : refusalText(scan.reason ?? scan.localReason ?? undefined);
  $('reason').textContent = reason;
  $('attendee').textContent = scan.attendeeName ?? '';
  $('ticket-type').textContent = scan.ticketTypeName ?? '';
  navigator.vibrate?.(admitted ? 80 : [80, 60, 80]);
}

/** A text refused before it is a scan (notACode): red, with why, and nothing kept. */
function showNotACode(why: string) {
  $('result').className = 'result refused';
  $('verdict').textContent = 'Refused';
  $('reason').textContent = why;
  $('attendee').textContent = '';
  $('ticket-type').textContent = '';
  navigator.vibrate?.([80, 60, 80]);
}

async function main() {
  if ('serviceWorker' in navigator) {
    navigator.serviceWorker.register('/scanner/sw.js', { scope: '/scanner' }).catch((err: unknown) => {
      console.warn('the scanner works online only: its service worker was not installed', err);
    });
  }
  const store = await Store.open();
  const door = new Door(store, () => render(door));

  const fromLink = pairingFromFragment();
  if (fromLink) clearFragment();
  if (fromLink && 'refused' in fromLink) pageProblem = fromLink.refused;
  else if (fromLink) await store.pair(fromLink);
  await door.start();
  render(door);

  addEventListener('hashchange', () => {
    const next = pairingFromFragment();
    if (!next) return;
    clearFragment();
    if ('refused' in next) {
      pageProblem = next.refused;
      render(door);
      return;
    }
    pageProblem = null;
    void door.pair(next);
  });

  const scan = async (code: string) => {
    // First the length: a megabyte of foreign text is not trimmed, stored or sent.
    const foreign = notACode(code);
    if (foreign) return showNotACode(foreign);
    if (!code.trim()) return;
    try {
      const { scan: done, byServer } = await door.scan(code, direction());
      show(done, byServer);
    } catch (err) {
      pageProblem = `The scan failed: ${err instanceof Error ? err.message : String(err)}`;
    }
    render(door);
  };

  const camera = new Camera($<HTMLVideoElement>('video'), scan);
  const toggle = $<HTMLButtonElement>('camera-toggle');
  const video = $<HTMLVideoElement>('video');
  video.hidden = true;
  toggle.addEventListener('click', async () => {
    if (camera.running) {
      camera.stop();
      video.hidden = true;
      toggle.textContent = 'Start camera';
      return;
    }
    try {
      video.hidden = false;
      await camera.start();
      toggle.textContent = 'Stop camera';
      pageProblem = null;
    } catch (err) {
      video.hidden = true;
      pageProblem = `The camera is not available: ${err instanceof Error ? err.message : String(err)}`;
    }
    render(door);
  });

  $<HTMLFormElement>('typed').addEventListener('submit', async (event) => {
    event.preventDefault();
    const input = $<HTMLInputElement>('code');
    const code = input.value;
    input.value = '';
    await scan(code);
    input.focus();
  });

  const unpair = $<HTMLButtonElement>('unpair');
  unpair.addEventListener('click', async () => {
    // Queued scans are uploaded only with this pairing's key: unpairing first asks once more.
    if (door.state.queued > 0 && !unpair.dataset.confirm) {
      unpair.dataset.confirm = '1';
      unpair.textContent = `Unpair anyway (${door.state.queued} scans not uploaded yet)`;
      return;
    }
    delete unpair.dataset.confirm;
    unpair.textContent = 'Unpair this device';
    camera.stop();
    video.hidden = true;
    toggle.textContent = 'Start camera';
    await door.unpair();
  });
}

void main();
