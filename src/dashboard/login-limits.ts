import ipaddr from 'ipaddr.js';
import { Redis } from 'ioredis';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';

const WINDOW_SECONDS = 15 * 60;
/** Attempts on one email from one address: enough for typos, far too few to guess a password. */
export const PER_EMAIL_AND_ADDRESS = 10;
/** Attempts from one address, across emails: stops one machine walking through accounts. */
export const PER_ADDRESS = 50;
/**
 * Attempts on one email from every address together (distributed guessing): a burst of this many
 * in the window, on top of one every EMAIL_STEADY_SECONDS. Past both the email is slowed, never
 * locked: the answer says to retry within EMAIL_STEADY_SECONDS.
 */
export const EMAIL_BURST = 50;
export const EMAIL_STEADY_SECONDS = 10;

/**
 * Counts sign-in (and sign-up) attempts, in Redis when REDIS_URL is set so every process counts
 * together, in memory otherwise. Ten wrong passwords lock out the address that sent them, for that
 * email only: the owner signing in from elsewhere is not locked out by someone else's guesses.
 */
export class LoginLimits {
  private readonly redis: Redis | null;
  private readonly byEmailAndAddress: RateLimiterAbstract;
  private readonly byAddress: RateLimiterAbstract;
  private readonly byEmail: BurstyRateLimiter;

  /** `keyPrefix`: where the counters live in Redis (tests give each run its own). */
  constructor(config: Config, { keyPrefix = 'montage:login' }: { keyPrefix?: string } = {}) {
    this.redis = config.redisUrl ? new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 }) : null;
    this.redis?.on('error', () => {});
    const limiter = (name: string, points: number, seconds: number) => {
      const options = { keyPrefix: `${keyPrefix}:${name}`, points, duration: seconds };
      return this.redis
        ? new RateLimiterRedis({ ...options, storeClient: this.redis, insuranceLimiter: new RateLimiterMemory(options) })
        : new RateLimiterMemory(options);
    };
    this.byEmailAndAddress = limiter('email-ip', PER_EMAIL_AND_ADDRESS, WINDOW_SECONDS);
    this.byAddress = limiter('ip', PER_ADDRESS, WINDOW_SECONDS);
    this.byEmail = new BurstyRateLimiter(limiter('email-steady', 1, EMAIL_STEADY_SECONDS), limiter('email-burst', EMAIL_BURST, WINDOW_SECONDS));
  }

  /**
   * Spends one attempt; 429 rate_limited with Retry-After when a budget is spent. The narrowest
   * budget goes first, so an address that is locked out of an email spends nothing of the
   * email's shared budget by trying on: it cannot slow the owner down by hammering.
   */
  async attempt(email: string, clientAddress: string, setRetryAfter: (seconds: number) => void): Promise<void> {
    const address = sourceOf(clientAddress);
    try {
      await this.byEmailAndAddress.consume(pairKey(email, address));
      await this.byAddress.consume(address);
      await this.byEmail.consume(email);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      setRetryAfter(seconds);
      throw new AppError('rate_limited', `Too many sign-in attempts; retry in ${seconds} s.`);
    }
  }

  /** A successful sign-in clears the count of its email from its address. */
  async succeeded(email: string, clientAddress: string): Promise<void> {
    await this.byEmailAndAddress.delete(pairKey(email, sourceOf(clientAddress)));
  }

  async close(): Promise<void> {
    if (this.redis) await this.redis.quit().catch(() => this.redis?.disconnect());
  }
}

/**
 * The source a budget is kept for: an IPv4 address, or the /64 of an IPv6 one, since one host
 * commonly holds a whole /64 and could otherwise take a fresh address for every guess.
 */
export function sourceOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).toNormalizedString().split(':').slice(0, 4).join(':')}::/64`;
}

// An address holds no space, so the first space ends it: no email can forge another pair's key.
const pairKey = (email: string, address: string) => `${address} ${email}`;
