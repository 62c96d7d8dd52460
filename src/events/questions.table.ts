export interface QuestionTable {
  id: string;
  accountId: string;
  eventId: string;
  label: string;
  help: string | null;
  /** `text` | `number` | `choice` | `multiple_choice` | `boolean` */
  kind: string;
  /** JSON array of strings for the choice kinds; null for the others. */
  options: string | null;
  /** 0 | 1 */
  required: number;
  /** `attendee` | `order` */
  askedPer: string;
  /** JSON array of ticket type ids; null: every ticket type of the event. */
  ticketTypeIds: string | null;
  position: number;
  /** Text answers: the most characters. */
  maxLength: number | null;
  /** Number answers: the bounds, inclusive. */
  minValue: number | null;
  maxValue: number | null;
  createdAt: number;
  updatedAt: number;
  /** Retired: no longer asked nor shown; its answers stay with their orders. */
  deletedAt: number | null;
}

/** One answer: to a question asked per attendee (of the ticket) or per order (ticketId null). */
export interface AnswerTable {
  questionId: string;
  /** The ticket's id for a question asked per attendee, the order's for one asked per order. */
  subjectId: string;
  accountId: string;
  eventId: string;
  orderId: string;
  ticketId: string | null;
  /** The answer as JSON: a string, a number, a boolean or an array of strings. */
  value: string;
  createdAt: number;
  updatedAt: number;
}

declare module '../db/database.js' {
  interface Database {
    questions: QuestionTable;
    answers: AnswerTable;
  }
}
