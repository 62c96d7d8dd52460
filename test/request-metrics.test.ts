import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Histogram, type Metric, Registry } from 'prom-client';
import { RequestMetrics } from '../src/http/request-metrics.js';

const BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

test('the request counter and histogram write the same /metrics text as prom-client Counter and Histogram fed the same requests', async () => {
  const ours = new Registry();
  const recorded = new RequestMetrics(BOUNDS);
  ours.registerMetric(recorded.counter('montage_http_requests_total', 'requests') as unknown as Metric);
  ours.registerMetric(recorded.histogram('montage_http_request_duration_seconds', 'durations') as unknown as Metric);

  const theirs = new Registry();
  const labelNames = ['method', 'route', 'status'] as const;
  const counter = new Counter({ name: 'montage_http_requests_total', help: 'requests', labelNames, registers: [theirs] });
  const histogram = new Histogram({ name: 'montage_http_request_duration_seconds', help: 'durations', labelNames, buckets: BOUNDS, registers: [theirs] });

  // Values on the bounds themselves, between them, above the highest, and a route with characters to escape.
  const requests: Array<[string, string, number, number]> = [
    ['GET', '/v1/keys/:id', 200, 0.0004],
    ['GET', '/v1/keys/:id', 200, 0.001],
    ['GET', '/v1/keys/:id', 200, 0.0011],
    ['GET', '/v1/keys/:id', 404, 0.25],
    ['POST', '/v1/events/:id/checkin', 201, 7.5],
    ['POST', '/v1/events/:id/checkin', 409, 5],
    ['GET', 'unmatched', 404, 0],
    ['GET', '/a"b\\c', 200, 0.03],
  ];
  for (const [method, route, status, seconds] of requests) {
    recorded.record(method, route, status, seconds);
    const labels = { method, route, status: String(status) };
    counter.inc(labels);
    histogram.observe(labels, seconds);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
});

test('an empty request histogram writes only its help and type, as prom-client does', async () => {
  const ours = new Registry();
  ours.registerMetric(new RequestMetrics(BOUNDS).histogram('h', 'help') as unknown as Metric);
  const theirs = new Registry();
  new Histogram({ name: 'h', help: 'help', labelNames: ['method', 'route', 'status'], buckets: BOUNDS, registers: [theirs] });
  assert.equal(await ours.metrics(), await theirs.metrics());
});
