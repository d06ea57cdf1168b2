/**
 * Route labels: the route patterns, never raw paths, so cardinality stays
 * fixed. A request names its route by index (`ROUTE.verify`), so counting it
 * is array arithmetic.
 */
export const ROUTE_NAMES = ['verify', 'batch', 'cluster', 'range', 'mirror', 'history', 'cyber_check', 'audit_app', 'evidence', 'admin', 'watchlists', 'disputes', 'reports', 'console', 'openapi', 'healthz', 'readyz', 'metrics', 'unknown'] as const;
export type RouteName = (typeof ROUTE_NAMES)[number];
export const ROUTE = Object.fromEntries(ROUTE_NAMES.map((name, index) => [name, index])) as { readonly [K in RouteName]: number };

export const REQUESTS_METRIC = 'upi_risk_http_requests_total';
export const LATENCY_METRIC = 'upi_risk_http_request_duration_seconds';
/** Upper bounds (seconds) of the latency histogram's buckets. */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1] as const;

/**
 * A metric in the JSON form of prom-client's `getMetricsAsJSON()`, which
 * `AggregatorRegistry.aggregate` combines across threads. (prom-client's
 * typings declare `type` as a numeric enum the runtime does not have.)
 */
export interface MetricJson {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary';
  readonly aggregator: 'sum' | 'max' | 'min' | 'average' | 'first' | 'omit';
  readonly values: readonly { readonly value: number; readonly labels: Readonly<Record<string, string | number>>; readonly metricName?: string }[];
}

/** Status codes are counted in a dense table; 100..599 covers every code HTTP defines. */
const STATUS_SPAN = 600;
/** Per route: one count per bucket, then the +Inf bucket. */
const BUCKET_SPAN = LATENCY_BUCKETS.length + 1;

/**
 * Requests by route and status, and their latency by route, for the
 * Prometheus counter `upi_risk_http_requests_total` and histogram
 * `upi_risk_http_request_duration_seconds`.
 *
 * Every answer is counted, so counting is on the hot path: prom-client's
 * `inc(labels)` / `observe(labels)` hash the label object on each call,
 * which cost about as much as the index lookup behind a single answer. Here
 * a request adds to typed arrays, and the label sets are written out only
 * when /metrics is scraped, in prom-client's JSON form, so they aggregate
 * across serving threads like any prom-client metric.
 */
export class RequestStats {
  readonly #requests = new Float64Array(ROUTE_NAMES.length * STATUS_SPAN);
  readonly #buckets = new Float64Array(ROUTE_NAMES.length * BUCKET_SPAN);
  readonly #seconds = new Float64Array(ROUTE_NAMES.length);
  #answered = 0;

  /** Answers counted so far, over every route and status. */
  get answered(): number {
    return this.#answered;
  }

  /** Count one answer of `route` (a `ROUTE` index) with `status`, taking `seconds`. */
  record(route: number, status: number, seconds: number): void {
    const code = status >= 100 && status < STATUS_SPAN ? status : 0;
    this.#answered++;
    this.#requests[route * STATUS_SPAN + code]!++;
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]!) bucket++;
    this.#buckets[route * BUCKET_SPAN + bucket]!++;
    this.#seconds[route]! += seconds;
  }

  /** Both metrics as prom-client's registry would report them: only label sets that were seen. */
  toJson(): MetricJson[] {
    return [this.#requestsJson(), this.#latencyJson()];
  }

  #requestsJson(): MetricJson {
    const values: MetricJson['values'][number][] = [];
    for (let route = 0; route < ROUTE_NAMES.length; route++) {
      for (let code = 0; code < STATUS_SPAN; code++) {
        const count = this.#requests[route * STATUS_SPAN + code]!;
        if (count > 0) values.push({ value: count, labels: { route: ROUTE_NAMES[route]!, status: code } });
      }
    }
    return { name: REQUESTS_METRIC, help: 'HTTP requests by route and status', type: 'counter', values, aggregator: 'sum' };
  }

  #latencyJson(): MetricJson {
    const values: MetricJson['values'][number][] = [];
    for (let route = 0; route < ROUTE_NAMES.length; route++) {
      const name = ROUTE_NAMES[route]!;
      let cumulative = 0;
      const at = route * BUCKET_SPAN;
      for (let bucket = 0; bucket < BUCKET_SPAN; bucket++) cumulative += this.#buckets[at + bucket]!;
      if (cumulative === 0) continue;
      cumulative = 0;
      for (let bucket = 0; bucket < BUCKET_SPAN; bucket++) {
        cumulative += this.#buckets[at + bucket]!;
        const le = bucket < LATENCY_BUCKETS.length ? LATENCY_BUCKETS[bucket]! : '+Inf';
        values.push({ value: cumulative, labels: { le, route: name }, metricName: `${LATENCY_METRIC}_bucket` });
      }
      values.push({ value: this.#seconds[route]!, labels: { route: name }, metricName: `${LATENCY_METRIC}_sum` });
      values.push({ value: cumulative, labels: { route: name }, metricName: `${LATENCY_METRIC}_count` });
    }
    return { name: LATENCY_METRIC, help: 'Time from request to response, by route', type: 'histogram', values, aggregator: 'sum' };
  }
}
