import { ARRAY_FIELDS, COLUMNS, type AnyTypedArray, type ArrayField, type SnapshotData } from '../snapshot-data.js';
import { alignUp, isSharedArrayBuffer } from './format.js';

/**
 * `data` itself when every array of it is in shared memory already (as a
 * build assembles them), or else copyToSharedMemory(data): a snapshot of
 * 1.5 GiB at 10M VPAs is not copied to be served.
 */
export function toSharedMemory(data: SnapshotData): SnapshotData {
  return ARRAY_FIELDS.every((field) => isSharedArrayBuffer(data[field].buffer)) ? data : copyToSharedMemory(data);
}

/**
 * A copy of `data` whose arrays are views of one SharedArrayBuffer, so
 * posting it to other threads shares that memory instead of copying it
 * (the form loadSnapshotOffThread delivers). For a snapshot assembled in
 * memory, to serve it without a round trip through its file.
 */
export function copyToSharedMemory(data: SnapshotData): SnapshotData {
  let total = 0;
  for (const field of ARRAY_FIELDS) total += alignUp(data[field].byteLength);
  const target = new SharedArrayBuffer(total);
  const arrays = {} as Record<ArrayField, AnyTypedArray>;
  let at = 0;
  for (const field of ARRAY_FIELDS) {
    const source = data[field];
    new Uint8Array(target, at, source.byteLength).set(new Uint8Array(source.buffer, source.byteOffset, source.byteLength));
    // As in materialize: the constructors' signatures name ArrayBuffer only; shared memory is fine.
    arrays[field] = new COLUMNS[field].type(target as unknown as ArrayBuffer, at, source.length);
    at += alignUp(source.byteLength);
  }
  return { ...data, ...arrays } as SnapshotData;
}
