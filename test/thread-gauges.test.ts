import { test } from 'node:test';
import assert from 'node:assert/strict';
import { enableCollector, threadCollector } from '../src/common/collector.js';
import { ServiceMetrics } from '../src/http/metrics.js';

// Each thread reports its own heap and its longest collection pause since
// the previous scrape: under load, a serving thread's collections are what
// stalls it longest, and an operator sees them here per thread.

function sample(text: string, line: string): number | undefined {
  const escaped = line.replace(/[{}"+.]/g, (c) => `\\${c}`);
  const match = new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text);
  return match === null ? undefined : Number(match[1]);
}

/** Collection events reach observers asynchronously, after the collection. */
const delivered = () => new Promise((resolve) => setTimeout(resolve, 50));

test('a thread reports its heap in use and its longest collection pause by kind, each scrape covering the time since the one before', async () => {
  enableCollector();
  const collect = threadCollector();
  assert.ok(collect !== undefined);
  const metrics = new ServiceMetrics('1');
  try {
    collect();
    await delivered();
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
      collect();
      await delivered();
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
