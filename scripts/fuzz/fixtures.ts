// The fuzzer's own loopback server: small PNG frames a blend job can fetch, and a webhook receiver
// that answers 200, so that the jobs and deliveries the fuzzed requests start can succeed.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import type { FixtureUrls } from './request.js';

export interface Fixtures {
  urls: FixtureUrls;
  /** Webhook deliveries received. */
  deliveries: () => number;
  close(): Promise<void>;
}

const FRAMES = 3;

export async function startFixtures(): Promise<Fixtures> {
  const frames = Array.from({ length: FRAMES }, (_, i) => png(96, 64, i));
  let deliveries = 0;
  const server = http.createServer((req, res) => {
    const frame = /^\/img\/(\d+)\.png$/.exec(req.url ?? '');
    if (req.method === 'GET' && frame && frames[Number(frame[1])]) {
      res.writeHead(200, { 'content-type': 'image/png' }).end(frames[Number(frame[1])]);
    } else if (req.method === 'POST' && req.url === '/hook') {
      deliveries++;
      req.resume().on('end', () => res.writeHead(200).end('ok'));
    } else {
      res.writeHead(404).end();
    }
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    urls: { images: frames.map((_, i) => `${base}/img/${i}.png`), hook: `${base}/hook`, refused: 'http://127.0.0.1:9/nothing.png' },
    deliveries: () => deliveries,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A gradient with a square that moves from frame to frame (what a median blend removes). */
function png(width: number, height: number, frame: number): Buffer {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    for (let x = 0; x < width; x++) {
      const inSquare = x >= 10 + frame * 25 && x < 30 + frame * 25 && y >= 20 && y < 40;
      const at = row + 1 + x * 3;
      raw[at] = inSquare ? 200 : (x * 255) / width;
      raw[at + 1] = inSquare ? 30 : (y * 255) / height;
      raw[at + 2] = inSquare ? 30 : 128;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
