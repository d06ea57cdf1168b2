/**
 * Worker side of hashRangesOffThread: one task, its answer posted back. The
 * arrays are in shared memory, so nothing big is copied either way.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { answerOneOff } from '../common/one-off-worker.js';
import { orderRecords, rangeRecordsById, type HashRangesTask } from './hash-ranges.js';

const task = workerData as HashRangesTask;
await answerOneOff(
  (reply) => parentPort!.postMessage(reply),
  () => {
    switch (task.kind) {
      case 'records':
        rangeRecordsById(task.data, task.records, task.fromSlot, task.toSlot, task.fromId, task.toId);
        return null;
      case 'order':
        return orderRecords(task.snapshotId, task.count, task.records);
    }
  },
);
