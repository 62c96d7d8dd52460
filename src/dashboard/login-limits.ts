import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';

const WINDOW_SECONDS = 15 * 60;
/** Attempts on one email: enough for typos, far too few to guess a password. */
const PER_EMAIL = 10;
/** Attempts from one address, across emails: stops one machine walking through accounts. */
const PER_ADDRESS = 50;

/**
 * Counts sign-in (and sign-up) attempts per email and per client address, in Redis when
 * REDIS_URL is set so every process counts together, in memory otherwise.
 */
export class LoginLimits {
  private readonly redis: Redis | null;
  private readonly byEmail: RateLimiterAbstract;
  private readonly byAddress: RateLimiterAbstract;

  constructor(config: Config) {
    this.redis = config.redisUrl ? new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 }) : null;
    this.redis?.on('error', () => {});
    this.byEmail = this.limiter('email', PER_EMAIL);
    this.byAddress = this.limiter('ip', PER_ADDRESS);
  }

  private limiter(name: string, points: number): RateLimiterAbstract {
    const options = { keyPrefix: `montage:login:${name}`, points, duration: WINDOW_SECONDS };
    return this.redis
      ? new RateLimiterRedis({ ...options, storeClient: this.redis, insuranceLimiter: new RateLimiterMemory(options) })
      : new RateLimiterMemory(options);
  }

  /** Spends one attempt from both budgets; 429 rate_limited with Retry-After when either is spent. */
  async attempt(email: string, address: string, setRetryAfter: (seconds: number) => void): Promise<void> {
    try {
      await this.byAddress.consume(address);
      await this.byEmail.consume(email);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      setRetryAfter(seconds);
      throw new AppError('rate_limited', `Too many sign-in attempts; retry in ${seconds} s.`);
    }
  }

  /** A successful sign-in clears the email's count, so its owner is not locked out later. */
  async succeeded(email: string): Promise<void> {
    await this.byEmail.delete(email);
  }

  async close(): Promise<void> {
    if (this.redis) await this.redis.quit().catch(() => this.redis?.disconnect());
  }
}
