/**
 * The per-request counters behind `montage_http_requests_total` and
 * `montage_http_request_duration_seconds`, kept as plain numbers per series and handed to
 * prom-client's registry only when /metrics is read. prom-client's own `inc` and `observe` check
 * and hash the labels on every call, which cost more than a cached key lookup does; here a
 * request adds to three numbers of a series found by one Map lookup.
 */

/** What prom-client's Registry reads of a metric (its `get()`), as its own Counter and Histogram return it. */
interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

interface MetricData {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: MetricValue[];
  aggregator: 'sum';
}

/** The duck type prom-client's `Registry.registerMetric` accepts. */
export interface CollectedMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): Promise<MetricData>;
  reset(): void;
}

interface Series {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Observations per bucket, not cumulative; the last slot is above the highest bound. */
  buckets: Float64Array;
}

export class RequestMetrics {
  private readonly series = new Map<string, Series>();
  private readonly bounds: Float64Array;

  /** `bounds`: the histogram's upper bounds in seconds, ascending. */
  constructor(bounds: readonly number[]) {
    this.bounds = Float64Array.from(bounds);
  }

  /** Counts one answered request and its duration. */
  record(method: string, route: string, status: number, seconds: number): void {
    const id = `${method} ${status} ${route}`;
    let series = this.series.get(id);
    if (!series) {
      series = { labels: { method, route, status: String(status) }, count: 0, sum: 0, buckets: new Float64Array(this.bounds.length + 1) };
      this.series.set(id, series);
    }
    series.count++;
    series.sum += seconds;
    const bounds = this.bounds;
    let b = 0;
    while (b < bounds.length && seconds > bounds[b]!) b++;
    series.buckets[b]!++;
  }

  /** The request counter, for a prom-client registry. */
  counter(name: string, help: string): CollectedMetric {
    return this.metric(name, help, 'counter', () => [...this.series.values()].map((s) => ({ labels: { ...s.labels }, value: s.count })));
  }

  /** The duration histogram, for a prom-client registry: the same lines prom-client's Histogram writes (cumulative buckets, `+Inf`, `_sum`, `_count`). */
  histogram(name: string, help: string): CollectedMetric {
    return this.metric(name, help, 'histogram', () => {
      const values: MetricValue[] = [];
      for (const s of this.series.values()) {
        let cumulative = 0;
        for (let b = 0; b < this.bounds.length; b++) {
          cumulative += s.buckets[b]!;
          values.push({ labels: { le: this.bounds[b]!, ...s.labels }, value: cumulative, metricName: `${name}_bucket` });
        }
        values.push(
          { labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${name}_bucket` },
          { labels: { ...s.labels }, value: s.sum, metricName: `${name}_sum` },
          { labels: { ...s.labels }, value: s.count, metricName: `${name}_count` },
        );
      }
      return values;
    });
  }

  private metric(name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue[]): CollectedMetric {
    return {
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, values: values(), aggregator: 'sum' }),
      reset: () => this.series.clear(),
    };
  }
}
