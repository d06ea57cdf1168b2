/**
 * Work on one thing (a file, by its path) run one piece after another
 * within this process: each starts once the one before has settled,
 * whatever became of it. Lock files tell processes apart; these tell apart
 * two writers of one process, which a lock naming this process cannot
 * (owner-lock.ts takes such a lock over as left behind).
 */
const turns = new Map<string, Promise<unknown>>();

export function inTurn<T>(name: string, work: () => Promise<T>): Promise<T> {
  const before = turns.get(name) ?? Promise.resolve();
  const mine = before.then(work, work);
  const settled = mine.catch(() => {});
  turns.set(name, settled);
  void settled.then(() => {
    if (turns.get(name) === settled) turns.delete(name);
  });
  return mine;
}
