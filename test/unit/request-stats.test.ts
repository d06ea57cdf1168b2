import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceMetrics } from '../../src/http/metrics.js';
import { LATENCY_BUCKETS, ROUTE, RequestStats } from '../../src/http/request-stats.js';
import { RequestIds } from '../../src/http/request-ids.js';
import { ByteScratch } from '../../src/common/byte-scratch.js';
import { sample } from '../helpers.js';

// Request counts and latency are kept in typed arrays and written out in
// Prometheus form only when scraped; this pins that form, alone and summed
// across serving threads.

test('requests are counted by route and status, and only seen label sets are reported', async () => {
  const metrics = new ServiceMetrics();
  metrics.requests.record(ROUTE.verify, 200, 0.00005);
  metrics.requests.record(ROUTE.verify, 200, 0.0003);
  metrics.requests.record(ROUTE.verify, 429, 0.00002);
  metrics.requests.record(ROUTE.batch, 400, 0.002);
  const text = await metrics.text();

  assert.match(text, /^# TYPE upi_risk_http_requests_total counter$/m);
  assert.equal(sample(text, 'upi_risk_http_requests_total{route="verify",status="200"}'), 2);
  assert.equal(sample(text, 'upi_risk_http_requests_total{route="verify",status="429"}'), 1);
  assert.equal(sample(text, 'upi_risk_http_requests_total{route="batch",status="400"}'), 1);
  assert.equal(sample(text, 'upi_risk_http_requests_total{route="cluster",status="200"}'), undefined);
  assert.doesNotMatch(text, /route="cluster"/, 'a route never answered has no series');
  assert.equal(metrics.requests.answered, 4, 'every answer counts towards the total a serving thread watches for idleness');
});

test('latency buckets are cumulative with +Inf, _sum and _count, as Prometheus histograms are', async () => {
  const stats = new RequestStats();
  // On a bucket's upper bound counts in that bucket (le means "less than or equal").
  stats.record(ROUTE.verify, 200, LATENCY_BUCKETS[0]);
  stats.record(ROUTE.verify, 200, 0.0004);
  stats.record(ROUTE.verify, 200, 0.003);
  stats.record(ROUTE.verify, 200, 5);
  const metrics = new ServiceMetrics();
  const text = await metrics.text([stats.toJson()]);

  const bucket = (le: string) => sample(text, `upi_risk_http_request_duration_seconds_bucket{le="${le}",route="verify"}`);
  assert.match(text, /^# TYPE upi_risk_http_request_duration_seconds histogram$/m);
  assert.equal(bucket('0.0001'), 1);
  assert.equal(bucket('0.00025'), 1);
  assert.equal(bucket('0.0005'), 2);
  assert.equal(bucket('0.0025'), 2);
  assert.equal(bucket('0.005'), 3);
  assert.equal(bucket('1'), 3);
  assert.equal(bucket('+Inf'), 4, 'past the last bound counts in +Inf only');
  assert.equal(sample(text, 'upi_risk_http_request_duration_seconds_count{route="verify"}'), 4);
  const sum = sample(text, 'upi_risk_http_request_duration_seconds_sum{route="verify"}');
  assert.ok(sum !== undefined && Math.abs(sum - (0.0001 + 0.0004 + 0.003 + 5)) < 1e-9, `sum ${sum}`);
});

test('the scrape sums request series over every serving thread', async () => {
  const main = new ServiceMetrics();
  const threads = [new ServiceMetrics('0'), new ServiceMetrics('1')];
  threads[0]!.requests.record(ROUTE.verify, 200, 0.0002);
  threads[1]!.requests.record(ROUTE.verify, 200, 0.0002);
  threads[1]!.requests.record(ROUTE.cluster, 404, 0.0002);
  const text = await main.text(await Promise.all(threads.map((t) => t.json())));

  assert.equal(sample(text, 'upi_risk_http_requests_total{route="verify",status="200"}'), 2);
  assert.equal(sample(text, 'upi_risk_http_requests_total{route="cluster",status="404"}'), 1);
  assert.equal(sample(text, 'upi_risk_http_request_duration_seconds_bucket{le="0.00025",route="verify"}'), 2);
  assert.equal(sample(text, 'upi_risk_http_request_duration_seconds_count{route="verify"}'), 2);
  // Gauges are not summed: each thread reports its own series.
  assert.ok(sample(text, 'upi_risk_event_loop_delay_max_seconds{thread="1"}') !== undefined);
});

test('request ids are unique within a thread and across threads', () => {
  const a = new RequestIds();
  const b = new RequestIds();
  const seen = new Set<string>();
  for (let i = 0; i < 10_000; i++) {
    seen.add(a.text(a.next()));
    seen.add(b.text(b.next()));
  }
  assert.equal(seen.size, 20_000);
  for (const id of seen) assert.match(id, /^[0-9a-f]{16}-[0-9a-z]+$/);
});

test('a request id written as bytes is its text', () => {
  const ids = new RequestIds();
  const out = new ByteScratch(64);
  for (const n of [0, 1, 35, 36, 1295, 1296, 123_456_789, Number.MAX_SAFE_INTEGER]) {
    // As AnswerHead writes it: the prefix, then the number.
    ids.writePrefix(out.clear());
    out.base36(n);
    assert.equal(Buffer.from(out.view()).toString('latin1'), ids.text(n));
  }
});
