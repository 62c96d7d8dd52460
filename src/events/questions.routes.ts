import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { TenantScope } from '../db/tenant.js';
import { problems } from '../http/openapi.js';
import { withLinkHeader } from '../http/paging.js';
import type { Scope } from '../http/principal.js';
import { IdParam, ref } from '../schemas.js';
import * as answers from './questions.answers.js';
import * as schemas from './questions.schemas.js';
import * as questions from './questions.service.js';

const READ: readonly Scope[] = ['events:read', 'events:write'];
const WRITE: readonly Scope[] = ['events:write'];

const EventParams = IdParam('Event id (`evt_...`)');

/** Questions an event asks per attendee or per order (docs/events.md, Questions), and the answers given. */
export const questionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);
  const tags = ['questions'];

  app.post(
    '/events/:id/questions',
    {
      config: { scope: WRITE },
      schema: { operationId: 'createQuestion', tags, summary: 'Create a question, asked per attendee or per order', params: EventParams, body: schemas.CreateQuestionBody, response: { 201: ref(schemas.QuestionSchema), ...problems('too_many_questions', 'event_cancelled') } },
    },
    async (request, reply) => {
      const question = await questions.createQuestion(scope(request), request.params.id, request.body);
      return reply.code(201).header('Location', `/v1/events/${question.eventId}/questions/${question.id}`).send(question);
    },
  );

  app.get(
    '/events/:id/questions',
    {
      config: { scope: READ },
      schema: { operationId: 'listQuestions', tags, summary: 'List questions in their order (position, then creation)', params: EventParams, querystring: schemas.QuestionListQuery, response: { 200: ref(schemas.QuestionPage) } },
    },
    async (request, reply) => withLinkHeader(request, reply, await questions.listQuestions(scope(request), request.params.id, request.query)),
  );

  app.get(
    '/events/:id/questions/:questionId',
    { config: { scope: READ }, schema: { operationId: 'getQuestion', tags, summary: 'Read a question', params: schemas.QuestionParams, response: { 200: ref(schemas.QuestionSchema) } } },
    (request) => questions.getQuestion(scope(request), request.params.id, request.params.questionId),
  );

  app.patch(
    '/events/:id/questions/:questionId',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'updateQuestion',
        tags,
        summary: 'Update a question (partial); options that answers use stay',
        params: schemas.QuestionParams,
        body: schemas.UpdateQuestionBody,
        response: { 200: ref(schemas.QuestionSchema), ...problems('question_options_in_use', 'event_cancelled') },
      },
    },
    (request) => questions.updateQuestion(scope(request), request.params.id, request.params.questionId, request.body),
  );

  app.delete(
    '/events/:id/questions/:questionId',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'deleteQuestion',
        tags,
        summary: 'Delete a question: it is no longer asked or shown; answers given stay stored with their orders',
        params: schemas.QuestionParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await questions.deleteQuestion(scope(request), request.params.id, request.params.questionId);
      return reply.code(204).send(null);
    },
  );

  const TicketParams = IdParam('Ticket id (`tkt_...`)');
  const OrderParams = IdParam('Order id (`ord_...`)');

  app.get(
    '/tickets/:id/answers',
    { config: { scope: READ }, schema: { operationId: 'getTicketAnswers', tags, summary: "A ticket's answers to the questions asked per attendee", params: TicketParams, response: { 200: ref(schemas.TicketAnswersSchema) } } },
    (request) => answers.getTicketAnswers(scope(request), request.params.id),
  );

  app.put(
    '/tickets/:id/answers',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'putTicketAnswers',
        tags,
        summary: "Replace a ticket's answers (validated as at order time; required questions stay required)",
        params: TicketParams,
        body: schemas.PutAnswersBody,
        response: { 200: ref(schemas.TicketAnswersSchema), ...problems('ticket_cancelled') },
      },
    },
    (request) => answers.putTicketAnswers(scope(request), request.params.id, request.body),
  );

  app.get(
    '/orders/:id/answers',
    { config: { scope: READ }, schema: { operationId: 'getOrderAnswers', tags, summary: "An order's answers to the questions asked per order", params: OrderParams, response: { 200: ref(schemas.OrderAnswersSchema) } } },
    (request) => answers.getOrderAnswers(scope(request), request.params.id),
  );

  app.put(
    '/orders/:id/answers',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'putOrderAnswers',
        tags,
        summary: "Replace a completed order's answers to the questions asked per order (validated as at order time)",
        params: OrderParams,
        body: schemas.PutAnswersBody,
        response: { 200: ref(schemas.OrderAnswersSchema), ...problems('order_not_completed') },
      },
    },
    (request) => answers.putOrderAnswers(scope(request), request.params.id, request.body),
  );
};
