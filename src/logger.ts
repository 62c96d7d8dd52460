/**
 * The one log interface of the project: pino's logger (the app's, a worker's) is one, and so is
 * a silent or capturing object in tests. A piece that writes fewer levels asks for a Pick of it.
 */
export interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
