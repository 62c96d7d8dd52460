import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ApiPlan, Config } from '../config.js';

export type Area = 'blend' | 'events';

interface Window {
  name: string;
  points: number;
  seconds: number;
}

export interface WindowState {
  name: string;
  limit: number;
  remaining: number;
  /** Unix seconds when the window resets. */
  reset: number;
  windowSeconds: number;
}

export interface Verdict {
  allowed: boolean;
  /** The window closest to exhaustion (the one that refused, when refused). */
  closest: WindowState;
  windows: WindowState[];
  /** Every window of the area, for `RateLimit-Policy`. */
  policy: Window[];
  retryAfterSeconds: number;
}

/**
 * Fixed-window limits per account and area (docs/api.md, Rate limits). Counters live in
 * Redis when REDIS_URL is set, so every process spends from one budget; in memory otherwise.
 */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();
  private readonly windows = new Map<string, Window[]>();
  private readonly redis: Redis | null;

  constructor(private readonly config: Config) {
    this.redis = config.redisUrl
      ? new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false })
      : null;
    // Connection trouble is answered by the in-memory insurance limiter; keep it out of the crash path.
    this.redis?.on('error', () => {});
  }

  windowsFor(plan: ApiPlan, area: Area): Window[] {
    const id = `${plan}:${area}`;
    let windows = this.windows.get(id);
    if (!windows) {
      const limits = this.config.limits[plan];
      windows =
        area === 'blend'
          ? [{ name: 'blend-hour', points: limits.blendPerHour, seconds: 3600 }]
          : [
              { name: 'events-minute', points: limits.eventsPerMinute, seconds: 60 },
              { name: 'events-day', points: limits.eventsPerDay, seconds: 86400 },
            ];
      this.windows.set(id, windows);
    }
    return windows;
  }

  private limiter(plan: ApiPlan, window: Window): RateLimiterAbstract {
    const id = `${plan}:${window.name}:${window.points}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      const options = { keyPrefix: `montage:rl:${id}`, points: window.points, duration: window.seconds };
      limiter = this.redis
        ? new RateLimiterRedis({ ...options, storeClient: this.redis, insuranceLimiter: new RateLimiterMemory(options) })
        : new RateLimiterMemory(options);
      this.limiters.set(id, limiter);
    }
    return limiter;
  }

  /**
   * Spends one request from every window of the area, in turn. When one refuses, what
   * was spent is given back: a refused request costs nothing (docs/api.md, Rate limits).
   */
  async consume(accountId: string, plan: ApiPlan, area: Area): Promise<Verdict> {
    const windows = this.windowsFor(plan, area);
    const states: WindowState[] = [];
    for (let i = 0; i < windows.length; i++) {
      const window = windows[i]!;
      const limiter = this.limiter(plan, window);
      try {
        states.push(stateOf(window, await limiter.consume(accountId)));
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        await Promise.all(windows.slice(0, i + 1).map((w) => this.limiter(plan, w).reward(accountId, 1)));
        const refused = stateOf(window, rejection);
        return {
          allowed: false,
          closest: { ...refused, remaining: 0 },
          windows: [...states, refused],
          policy: windows,
          retryAfterSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)),
        };
      }
    }
    return { allowed: true, closest: closestToExhaustion(states), windows: states, policy: windows, retryAfterSeconds: 0 };
  }

  /** Current usage of each window without spending anything (for GET /account). */
  async usage(accountId: string, plan: ApiPlan): Promise<WindowState[]> {
    const now = Date.now();
    const all = [...this.windowsFor(plan, 'events'), ...this.windowsFor(plan, 'blend')];
    return Promise.all(
      all.map(async (window) => {
        const res = await this.limiter(plan, window).get(accountId);
        return res
          ? stateOf(window, res)
          : { name: window.name, limit: window.points, remaining: window.points, reset: Math.ceil(now / 1000) + window.seconds, windowSeconds: window.seconds };
      }),
    );
  }

  async close(): Promise<void> {
    if (this.redis) await this.redis.quit().catch(() => this.redis?.disconnect());
  }
}

function stateOf(window: Window, res: RateLimiterRes): WindowState {
  return {
    name: window.name,
    limit: window.points,
    remaining: Math.max(0, window.points - res.consumedPoints),
    reset: Math.ceil((Date.now() + res.msBeforeNext) / 1000),
    windowSeconds: window.seconds,
  };
}

function closestToExhaustion(states: WindowState[]): WindowState {
  return states.reduce((a, b) => (b.remaining < a.remaining ? b : a));
}

/** `X-RateLimit-*` (GitHub style) and the IETF draft's `RateLimit-Policy` / `RateLimit`. */
export function rateLimitHeaders(verdict: Verdict): Record<string, string> {
  const { closest } = verdict;
  // `reset` was rounded up to a whole second; counting from the current second rounded down would
  // add that rounding twice (t=61 for a 60-second window). Never more than the window itself.
  const secondsLeft = Math.min(closest.windowSeconds, Math.max(0, closest.reset - Math.ceil(Date.now() / 1000)));
  return {
    'X-RateLimit-Limit': String(closest.limit),
    'X-RateLimit-Remaining': String(closest.remaining),
    'X-RateLimit-Reset': String(closest.reset),
    'RateLimit-Policy': policyHeader(verdict.policy),
    RateLimit: `"${closest.name}";r=${closest.remaining};t=${secondsLeft}`,
  };
}

const policies = new WeakMap<Window[], string>();

/** `RateLimit-Policy` of a list of windows (the same lists come back: see RateLimits.windowsFor). */
function policyHeader(windows: Window[]): string {
  let header = policies.get(windows);
  if (header === undefined) {
    header = windows.map((w) => `"${w.name}";q=${w.points};w=${w.seconds}`).join(', ');
    policies.set(windows, header);
  }
  return header;
}
