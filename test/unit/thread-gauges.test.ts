import { constants, PerformanceObserver, type NodeGCPerformanceDetail, type PerformanceEntry } from 'node:perf_hooks';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { enableCollector, threadCollector } from '../../src/common/collector.js';
import { ServiceMetrics } from '../../src/http/metrics.js';
import { sample } from '../helpers.js';

// Each thread reports its own heap and its longest collection pause since
// the previous scrape: under load, collections are a large part of a serving
// thread's longest stalls, and an operator sees them here per thread.

/**
 * Run a full collection and wait until collection events have reached
 * observers: Node delivers them to every observer in one pass, after the
 * collection, so the metrics' observer has its entry once this one has.
 */
function collectAndDeliver(collect: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    // Delivery does not keep the event loop alive; this timer does, and bounds the wait.
    const timeout = setTimeout(() => reject(new Error('no full collection was reported within 10 s')), 10_000);
    const observer = new PerformanceObserver((list) => {
      if (list.getEntries().some((entry) => (entry as PerformanceEntry & { detail?: NodeGCPerformanceDetail }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) {
        clearTimeout(timeout);
        observer.disconnect();
        resolve();
      }
    });
    observer.observe({ entryTypes: ['gc'] });
    collect();
  });
}

test('a thread reports its heap in use and its longest collection pause by kind, each scrape covering the time since the one before', async () => {
  enableCollector();
  const collect = threadCollector();
  assert.ok(collect !== undefined);
  const metrics = new ServiceMetrics('1');
  try {
    await collectAndDeliver(collect);
    const first = await metrics.text();
    const major = sample(first, 'upi_risk_gc_pause_max_seconds{thread="1",kind="major"}');
    assert.ok(major !== undefined && major > 0 && major < 10, `a full collection paused the thread: ${major} s`);
    const heap = sample(first, 'upi_risk_heap_used_bytes{thread="1"}');
    assert.ok(heap !== undefined && heap > 1_000_000, `heap in use: ${heap} bytes`);

    // No full collection since: the series stays, at 0, for this interval.
    const second = await metrics.text();
    assert.equal(sample(second, 'upi_risk_gc_pause_max_seconds{thread="1",kind="major"}'), 0);

    // Another thread's figures come as their own series, not combined with this one's.
    const other = new ServiceMetrics('0');
    try {
      await collectAndDeliver(collect);
      const both = await metrics.text([await other.json()]);
      assert.ok(sample(both, 'upi_risk_gc_pause_max_seconds{thread="0",kind="major"}')! > 0);
      assert.ok(sample(both, 'upi_risk_gc_pause_max_seconds{thread="1",kind="major"}')! > 0);
      assert.ok(sample(both, 'upi_risk_heap_used_bytes{thread="0"}')! > 0);
    } finally {
      other.close();
    }
  } finally {
    metrics.close();
  }
});
