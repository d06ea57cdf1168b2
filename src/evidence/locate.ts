import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import type { DataDir } from '../common/data-dir.js';
import { ErrorCode, EvidenceError } from '../common/errors.js';
import { LineCheck } from './lines.js';
import { listEvidenceFiles } from './store.js';

/**
 * Which of `ids` name stored evidence, each with the (lower-cased) VPA its
 * first occurrence names, the one that counts (ingestion order): what a
 * running engine knows from memory, read from the evidence files, for a
 * command run without a server. Stops reading once every id is found.
 */
export async function locateStoredEvidence(dir: DataDir, ids: readonly string[]): Promise<Map<string, string>> {
  const wanted = new Set(ids);
  const found = new Map<string, string>();
  for (const name of await listEvidenceFiles(dir)) {
    if (found.size === wanted.size) break;
    const path = join(dir.evidence, name);
    try {
      for await (const lines of new LineCheck(path).lines(createReadStream(path))) {
        for (const { record } of lines) {
          if (wanted.has(record.evidenceId) && !found.has(record.evidenceId)) found.set(record.evidenceId, record.upi);
        }
        if (found.size === wanted.size) break;
      }
    } catch (error) {
      throw new EvidenceError(ErrorCode.EVIDENCE_FILE, `cannot read the stored evidence ${path}: ${(error as Error).message}`, { cause: error });
    }
  }
  return found;
}
