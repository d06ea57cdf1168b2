/**
 * Worker side of hashRangesOffThread: one task, its answer posted back. The
 * arrays are in shared memory, so nothing big is copied either way.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { answerOneOff } from '../common/one-off-worker.js';
import { hashHeads, orderFromHeads, rangeRecordsOf, type HashRangesTask } from './hash-ranges.js';

const task = workerData as HashRangesTask;
await answerOneOff(
  (reply) => parentPort!.postMessage(reply),
  () => {
    switch (task.kind) {
      case 'heads':
        hashHeads(task.data, task.heads, task.from, task.to);
        return null;
      case 'order':
        return orderFromHeads(task.snapshotId, task.count, task.heads);
      case 'records':
        rangeRecordsOf(task.data, task.order, task.records, task.from, task.to);
        return null;
    }
  },
);
