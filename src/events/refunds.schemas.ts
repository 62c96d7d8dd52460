import { Type } from 'typebox';

export const RefundOrderBody = Type.Object(
  {
    amount: Type.Optional(Type.Integer({ format: 'int64', minimum: 1, maximum: 100_000_000_00, description: 'Integer minor units (cents); default: all that is left to refund.' })),
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Why, in your words; kept on the refund.' })),
  },
  { $id: 'RefundOrderRequest', examples: [{ amount: 1500, reason: 'Goodwill: the stage started late' }], additionalProperties: false },
);

export const refundComponents = [RefundOrderBody];
