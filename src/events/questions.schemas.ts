import { Type } from 'typebox';
import { PageQuery, pageSchema } from '../http/paging.js';
import { Nullable, PathId, ref, StringEnum, Timestamp } from '../schemas.js';

/** An event asks at most this many questions (live ones). */
export const MAX_QUESTIONS_PER_EVENT = 100;
export const MAX_OPTIONS = 50;
/** A text answer's limit when the question sets none, and the most it may set. */
export const DEFAULT_MAX_LENGTH = 1000;
export const MAX_TEXT_LENGTH = 10_000;
/**
 * The most one subject's answers (an attendee's, or an order's) take, as stored (UTF-8 bytes of
 * their JSON): what bounds the memory of a page of attendees or an export batch.
 */
export const MAX_ANSWERS_BYTES = 64 * 1024;

export const QuestionKind = StringEnum(['text', 'number', 'choice', 'multiple_choice', 'boolean'], {
  description: '`text` (a string up to `maxLength`), `number` (finite, within `min`..`max`), `choice` (one of `options`), `multiple_choice` (one or more of `options`), `boolean` (true or false).',
});
export const AskedPer = StringEnum(['attendee', 'order'], { description: '`attendee`: asked for each ticket of the types it covers; `order`: asked once per order that has such a ticket.' });

/** No C0 control characters (tabs, line breaks included) nor bidirectional overrides or isolates, which would disguise a label or option in lists and exports. */
const NOT_PLAIN = '\\u0000-\\u001F\\u007F\\u202A-\\u202E\\u2066-\\u2069';
const PLAIN = `^[^${NOT_PLAIN}]*$`;
const Label = Type.String({ minLength: 1, maxLength: 200, pattern: PLAIN, description: 'One line of plain text: no control characters nor bidirectional overrides.' });
const Help = Type.String({ maxLength: 1000 });
/**
 * An option: plain text, without `, ` (the export joins a multiple choice's options with it): runs of
 * commas only before another character than a space, or at the end. Written without a lookahead,
 * which some clients' regular expressions (and the fuzzer's generators) do not have.
 */
const Option = Type.String({ minLength: 1, maxLength: 200, pattern: `^(?:[^,${NOT_PLAIN}]|,+[^, ${NOT_PLAIN}])*,*$`, description: 'Plain text without control characters, bidirectional overrides, or `, `.' });
const Options = Type.Array(Option, {
  minItems: 1,
  maxItems: MAX_OPTIONS,
  uniqueItems: true,
  description: 'The answers a choice question allows (choice kinds only).',
});
const TicketTypeIds = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  minItems: 1,
  maxItems: 100,
  uniqueItems: true,
  description: 'The ticket types the question is asked for; null (the default): every ticket type of the event.',
});
export const MAX_POSITION = 1_000_000;
const Position = Type.Integer({ format: 'int32', minimum: 0, maximum: MAX_POSITION, description: 'Where the question stands: lists, forms and export columns go by position, then by creation.' });
const MaxLength = Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_TEXT_LENGTH, description: `Text questions: the most characters an answer may have (${DEFAULT_MAX_LENGTH} unless set).` });
const Bound = Type.Number({ minimum: -1e15, maximum: 1e15 });

export const QuestionSchema = Type.Object(
  {
    id: Type.String({ examples: ['qst_01m80eg3tperaacsapew6ns732'] }),
    eventId: Type.String(),
    label: Type.String(),
    help: Nullable(Type.String()),
    kind: QuestionKind,
    options: Nullable(Type.Array(Type.String(), { maxItems: MAX_OPTIONS }), { description: 'The allowed answers of a choice question; null for the other kinds.' }),
    required: Type.Boolean(),
    askedPer: AskedPer,
    ticketTypeIds: Nullable(Type.Array(Type.String(), { maxItems: 100 }), { description: 'The ticket types the question is asked for; null: all of them.' }),
    position: Type.Integer(),
    maxLength: Nullable(Type.Integer(), { description: 'Text questions: the most characters; null for the other kinds.' }),
    min: Nullable(Type.Number(), { description: 'Number questions: the smallest answer allowed, if any.' }),
    max: Nullable(Type.Number(), { description: 'Number questions: the largest answer allowed, if any.' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Question' },
);

export const CreateQuestionBody = Type.Object(
  {
    label: Label,
    help: Type.Optional(Help),
    kind: QuestionKind,
    options: Type.Optional(Options),
    required: Type.Optional(Type.Boolean({ default: false })),
    askedPer: Type.Optional(AskedPer),
    ticketTypeIds: Type.Optional(Nullable(TicketTypeIds)),
    position: Type.Optional(Position),
    maxLength: Type.Optional(MaxLength),
    min: Type.Optional(Bound),
    max: Type.Optional(Bound),
  },
  {
    $id: 'CreateQuestionRequest',
    additionalProperties: false,
    description: '`kind` and `askedPer` are fixed once the question exists. Without `position` the question goes last.',
    examples: [{ label: 'Meal', kind: 'choice', options: ['Vegetarian', 'Vegan', 'Anything'], required: true, askedPer: 'attendee' }],
  },
);

export const UpdateQuestionBody = Type.Object(
  {
    label: Type.Optional(Label),
    help: Type.Optional(Nullable(Help)),
    options: Type.Optional(Options),
    required: Type.Optional(Type.Boolean()),
    ticketTypeIds: Type.Optional(Nullable(TicketTypeIds)),
    position: Type.Optional(Position),
    maxLength: Type.Optional(Nullable(MaxLength)),
    min: Type.Optional(Nullable(Bound)),
    max: Type.Optional(Nullable(Bound)),
  },
  {
    $id: 'UpdateQuestionRequest',
    additionalProperties: false,
    minProperties: 1,
    description: 'Options that given answers use cannot be removed (409 question_options_in_use). Other changes apply to answers given or edited after them.',
    examples: [{ options: ['Vegetarian', 'Vegan', 'Anything', 'Halal'], required: false }],
  },
);

/**
 * An answer as sent: a string (text, choice), a number, a boolean, an array of strings (multiple
 * choice), or null (no answer). The question decides which; the service checks it (with a pointer).
 */
export const AnswerValue = Type.Union(
  [Type.String({ maxLength: MAX_TEXT_LENGTH }), Type.Number(), Type.Boolean(), Type.Array(Type.String({ maxLength: 200 }), { maxItems: MAX_OPTIONS }), Type.Null()],
  { description: 'A string (text, choice), a number, a boolean, an array of options (multiple choice), or null (no answer).' },
);

export const AnswerInput = Type.Object(
  { questionId: Type.String({ minLength: 1, maxLength: 64 }), value: AnswerValue },
  { additionalProperties: false },
);

export const AnswersInput = Type.Array(AnswerInput, { maxItems: MAX_QUESTIONS_PER_EVENT, description: 'Answers to the event\'s questions, each question once.' });

/** An answer as the API shows it (attendee list, export, the answers of a ticket or an order). */
export const AnswerSchema = Type.Object(
  {
    questionId: Type.String(),
    value: Type.Union([Type.String({ maxLength: MAX_TEXT_LENGTH }), Type.Number(), Type.Boolean(), Type.Array(Type.String({ maxLength: 200 }), { maxItems: MAX_OPTIONS })], {
      description: 'A string (text, choice), a number, a boolean, or an array of options (multiple choice).',
    }),
  },
  { $id: 'Answer' },
);

export const PutAnswersBody = Type.Object(
  { answers: AnswersInput },
  {
    $id: 'PutAnswersRequest',
    additionalProperties: false,
    description: 'The complete set of answers: questions left out (or answered null) have no answer afterwards; a required question must be answered.',
    examples: [{ answers: [{ questionId: 'qst_01m80eg3tperaacsapew6ns732', value: 'Vegan' }] }],
  },
);

export const TicketAnswersSchema = Type.Object(
  { ticketId: Type.String({ examples: ['tkt_01m80eg3tperaacsapew6ns732'] }), orderId: Type.String(), answers: Type.Array(ref(AnswerSchema), { maxItems: MAX_QUESTIONS_PER_EVENT }) },
  { $id: 'TicketAnswers' },
);

export const OrderAnswersSchema = Type.Object(
  { orderId: Type.String({ examples: ['ord_01m80eg3tperaacsapew6ns732'] }), answers: Type.Array(ref(AnswerSchema), { maxItems: MAX_QUESTIONS_PER_EVENT }) },
  { $id: 'OrderAnswers' },
);

export const QuestionParams = Type.Object({ id: PathId(), questionId: PathId() }, { additionalProperties: false });
export const QuestionListQuery = Type.Object(PageQuery, { additionalProperties: false });
export const QuestionPage = pageSchema('QuestionPage', QuestionSchema);

export const questionComponents = [QuestionSchema, CreateQuestionBody, UpdateQuestionBody, QuestionPage, AnswerSchema, PutAnswersBody, TicketAnswersSchema, OrderAnswersSchema];
