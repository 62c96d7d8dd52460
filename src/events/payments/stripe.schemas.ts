import { Type } from 'typebox';
import { PathId, StringEnum, Timestamp } from '../../schemas.js';

export const StripeSettingsBody = Type.Object(
  {
    secretKey: Type.String({
      pattern: '^(sk|rk)_(test|live)_[0-9A-Za-z]{16,247}$',
      maxLength: 256,
      description: "The account's Stripe secret key (`sk_...`) or, better, a restricted key (`rk_...`) allowed to write Checkout Sessions and Refunds. Never shown again.",
    }),
    webhookSecret: Type.String({
      pattern: '^whsec_[0-9A-Za-z+/=]{16,200}$',
      maxLength: 206,
      description: "The signing secret of the webhook endpoint made in Stripe's dashboard for `webhookUrl` (shown there as `whsec_...`). Never shown again.",
    }),
  },
  {
    $id: 'StripeSettingsRequest',
    additionalProperties: false,
    examples: [{ secretKey: 'rk_test_51ExampleOnlyNotARealKey000', webhookSecret: 'whsec_ExampleOnlyNotARealSecret000' }],
  },
);

export const StripeSettingsSchema = Type.Object(
  {
    object: Type.Literal('stripe_settings'),
    mode: StringEnum(['test', 'live'], { description: "Stripe's test or live mode, as the key says." }),
    keyType: StringEnum(['secret', 'restricted'], { description: '`sk_` (secret) or `rk_` (restricted) key.' }),
    secretKeyLast4: Type.String({ pattern: '^[0-9A-Za-z]{4}$', maxLength: 4, description: 'The last 4 characters of the key, to tell keys apart; the key itself is never shown.', examples: ['K000'] }),
    webhookUrl: Type.String({
      format: 'uri',
      maxLength: 500,
      description: "The URL to give Stripe as the webhook endpoint (events `checkout.session.completed` and `checkout.session.async_payment_succeeded`).",
      examples: ['https://montage.example.com/v1/payments/stripe/webhook/acct_01m80eg3tperaacsapew6ns732'],
    }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'StripeSettings' },
);

export const StripeWebhookParams = Type.Object({ accountId: PathId('The account whose Stripe sends the event (`acct_...`)') }, { additionalProperties: false });

export const StripeWebhookReceiptSchema = Type.Object(
  {
    received: Type.Literal(true),
    outcome: StringEnum(['completed', 'refunded', 'ignored', 'duplicate'], {
      description:
        '`completed`: the order is paid; `refunded`: the payment could not be honoured (the hold ended and its places were sold) and was refunded at once; ' +
        '`ignored`: an event Montage does not act on; `duplicate`: this event was acted on before.',
    }),
  },
  { $id: 'StripeWebhookReceipt', examples: [{ received: true, outcome: 'completed' }] },
);

export const stripeComponents = [StripeSettingsBody, StripeSettingsSchema, StripeWebhookReceiptSchema];
