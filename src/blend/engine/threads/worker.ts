import { parentPort, workerData } from 'node:worker_threads';
import type { TaskFunction, TaskTable } from './tasks.js';

// Runs one task at a time for the pool (threads/pool.ts): looks the task up in the pool's table
// (threads/tasks.ts), imports its module on first use and calls the function.
const table = (import(workerData.table as string) as Promise<{ TASKS: TaskTable }>).then((m) => m.TASKS);

async function functionOf(name: string): Promise<TaskFunction> {
  const task = (await table)[name];
  if (!task) throw new Error(`no task ${name} in ${workerData.table}`);
  const fn = ((await task.load()) as Record<string, unknown>)[task.fn];
  if (typeof fn !== 'function') throw new Error(`task ${name}: its module has no function ${task.fn}`);
  return fn as TaskFunction;
}

parentPort!.on('message', async (msg: { id: number; name: string; args: unknown[] }) => {
  try {
    const fn = await functionOf(msg.name);
    const value = await (fn as (...args: unknown[]) => unknown)(...msg.args);
    parentPort!.postMessage({ id: msg.id, ok: true, value });
  } catch (err) {
    const e = err as Error & { code?: string; index?: number };
    parentPort!.postMessage({ id: msg.id, ok: false, error: { message: e.message, name: e.name, code: e.code, index: e.index } });
  }
});
