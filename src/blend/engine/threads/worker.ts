import { parentPort } from 'node:worker_threads';

// Runs one task at a time for the pool (threads/pool.ts): imports the named module once and calls the function.
const modules = new Map<string, Promise<Record<string, unknown>>>();

parentPort!.on('message', async (msg: { id: number; module: string; fn: string; args: unknown[] }) => {
  try {
    let mod = modules.get(msg.module);
    if (!mod) {
      mod = import(msg.module) as Promise<Record<string, unknown>>;
      modules.set(msg.module, mod);
    }
    const fn = (await mod)[msg.fn];
    if (typeof fn !== 'function') throw new Error(`${msg.module} has no function ${msg.fn}`);
    const value = await (fn as (...args: unknown[]) => unknown)(...msg.args);
    parentPort!.postMessage({ id: msg.id, ok: true, value });
  } catch (err) {
    const e = err as Error & { code?: string; index?: number };
    parentPort!.postMessage({ id: msg.id, ok: false, error: { message: e.message, name: e.name, code: e.code, index: e.index } });
  }
});
