#!/usr/bin/env node
// The upload benchmark's HTTP floor: the least a Node server can do with an uploaded file. One
// route, POST /upload: the request body piped into a temporary file (the write buffer Montage's
// store uses, 1 MiB) and renamed, then 201 with a small JSON body; GET /healthz. No parsing, no
// checks, no database, no logging: what is left is the loopback HTTP transfer and the disk write.
//
// Environment:
//   PORT        port to listen on (127.0.0.1)
//   FLOOR_DIR   directory the files are written to (twenty names, reused)
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

const port = Number(process.env.PORT);
const dir = process.env.FLOOR_DIR;
if (!port || !dir) {
  console.error('PORT and FLOOR_DIR must be set');
  process.exit(2);
}
fs.mkdirSync(dir, { recursive: true });

let received = 0;
const server = http.createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') return res.end('ok');
  if (req.method !== 'POST' || req.url !== '/upload') return res.writeHead(404).end();
  const file = path.join(dir, `upload-${received++ % 20}`);
  try {
    await pipeline(req, fs.createWriteStream(`${file}.tmp`, { highWaterMark: 1024 * 1024 }));
    await fs.promises.rename(`${file}.tmp`, file);
    res.writeHead(201, { 'content-type': 'application/json' }).end('{"stored":true}');
  } catch (err) {
    res.writeHead(500).end(String(err));
  }
});
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
