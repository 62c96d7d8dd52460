import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import type { PaymentProvider, ProviderName } from './provider.js';

/**
 * `manual`: bank transfer or cash at the box office. Nothing to start and nothing to send back
 * through a network: the organiser takes and returns the money, and confirms the order through the
 * API or the dashboard (`POST /v1/orders/:id/confirm`).
 */
export const manualProvider: PaymentProvider = {
  name: 'manual',
  async begin() {
    return { reference: null, checkoutUrl: null };
  },
  async refund() {
    return { reference: null };
  },
};

/**
 * The provider `name` as the account has it set up. A provider the account cannot use is 422
 * `payment_provider_not_configured`, before any order is placed.
 */
export async function providerFor(_db: Db, accountId: string, name: ProviderName): Promise<PaymentProvider> {
  switch (name) {
    case 'manual':
      return manualProvider;
    case 'stripe':
      throw new AppError('payment_provider_not_configured', `Account ${accountId} has no Stripe set up.`, { provider: name });
  }
}
