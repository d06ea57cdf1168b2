/** Worker side of cutMirrorOffThread: the arrays come and go in shared memory. */
import { parentPort, workerData } from 'node:worker_threads';
import { answerOneOff } from '../common/one-off-worker.js';
import { cutMirror, type CutInput } from './mirror-cut.js';

await answerOneOff(
  (reply) => parentPort!.postMessage(reply),
  () => cutMirror(workerData as CutInput),
);
